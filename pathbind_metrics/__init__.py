"""PathBind metrics: pure numpy/scipy functions from arrays to numbers (scikit-learn's where it computes the very
metric)."""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "accuracy": "pathbind_metrics.vqa",
    "attention_region_metrics": "pathbind_metrics.grounding",
    "choice_letters": "pathbind_metrics.parsing",
    "cohen_kappa": "pathbind_metrics.agreement",
    "consensus_filter": "pathbind_metrics.consensus",
    "correct_count_distribution": "pathbind_metrics.consensus",
    "cluster_interval": "pathbind_metrics.resampling",
    "cross_query_correlation": "pathbind_metrics.grounding",
    "effective_support_ratio": "pathbind_metrics.grounding",
    "heat_map": "pathbind_metrics.grounding",
    "leak_partition": "pathbind_metrics.leakage",
    "multimodal_gain": "pathbind_metrics.vqa",
    "overlap": "pathbind_metrics.leakage",
    "parse_barcode": "pathbind_metrics.tcga",
    "parse_choice": "pathbind_metrics.parsing",
    "parse_yes_no": "pathbind_metrics.parsing",
    "percent_agreement": "pathbind_metrics.agreement",
    "pixel_average_precision": "pathbind_metrics.grounding",
    "stratified_metric": "pathbind_metrics.leakage",
    "text_solvable": "pathbind_metrics.consensus",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    # Imported on first use, so that importing one metric module (as every plugin load does) does not load scipy's
    # statistics and image modules for all of them.
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
