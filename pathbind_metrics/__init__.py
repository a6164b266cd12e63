"""PathBind metrics: pure numpy/scipy functions from arrays to numbers."""

from pathbind_metrics.agreement import cohen_kappa, percent_agreement
from pathbind_metrics.consensus import consensus_filter, correct_count_distribution, text_solvable
from pathbind_metrics.grounding import (
    attention_region_metrics,
    cross_query_correlation,
    effective_support_ratio,
    heat_map,
    pixel_average_precision,
)
from pathbind_metrics.leakage import leak_partition, overlap, stratified_metric
from pathbind_metrics.parsing import choice_letters, parse_choice, parse_yes_no
from pathbind_metrics.tcga import parse_barcode
from pathbind_metrics.vqa import accuracy, multimodal_gain, paired_bootstrap_ci

__all__ = [
    "accuracy",
    "attention_region_metrics",
    "choice_letters",
    "cohen_kappa",
    "consensus_filter",
    "correct_count_distribution",
    "cross_query_correlation",
    "effective_support_ratio",
    "heat_map",
    "leak_partition",
    "multimodal_gain",
    "overlap",
    "paired_bootstrap_ci",
    "parse_barcode",
    "parse_choice",
    "parse_yes_no",
    "percent_agreement",
    "pixel_average_precision",
    "stratified_metric",
    "text_solvable",
]
