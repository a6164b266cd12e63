"""PathBind metrics: pure numpy/scipy functions from arrays to numbers."""

from pathbind_metrics.agreement import cohen_kappa, percent_agreement
from pathbind_metrics.consensus import consensus_filter, correct_count_distribution, text_solvable
from pathbind_metrics.parsing import choice_letters, parse_choice, parse_yes_no
from pathbind_metrics.vqa import accuracy, multimodal_gain, paired_bootstrap_ci

__all__ = [
    "accuracy",
    "choice_letters",
    "cohen_kappa",
    "consensus_filter",
    "correct_count_distribution",
    "multimodal_gain",
    "paired_bootstrap_ci",
    "parse_choice",
    "parse_yes_no",
    "percent_agreement",
    "text_solvable",
]
