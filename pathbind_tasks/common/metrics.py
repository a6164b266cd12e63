"""Every metric PathBind's tasks report, declared once: its name, the aggregation of its per-document records, its
direction, and the task kinds whose ``process_results`` emit it.

Everything else reads these declarations: a task YAML takes its ``metric_list`` from here by lmms-eval's own
``!function`` (``metric_list: !function pathbind_tasks.common.metrics.<kind>``, so the YAML loads with or without
PathBind's seam), a scorer emits its record under :func:`names` of its kind, and the plugin door
(``pathbind.plugin_metrics``) offers the VQA aggregations by name. Adding a metric is one :class:`Metric` below
plus its aggregation. A name may be declared again for other kinds (each family has its ``invalid_rate``), never
twice for one kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from pathbind_tasks.common import faithfulness_aggregations as fa
from pathbind_tasks.common import faithfulness_methods as fmethods
from pathbind_tasks.common import grounding_aggregations as ga
from pathbind_tasks.common import paraphrase_aggregations as pa
from pathbind_tasks.common import pathview_aggregations as pv
from pathbind_tasks.common import specificity_aggregations as sp
from pathbind_tasks.common import vqa_aggregations as va
from pathbind_tasks.common.accounting import accounting
from pathbind_tasks.common.conditions import ABLATION_CONDITIONS
from pathbind_tasks.common.ordering import in_id_order

Aggregate = Callable[[list[Any]], Any]  # lmms-eval hands an aggregation the list of every rank's records


@dataclass(frozen=True)
class Metric:
    """A metric as results.json reports it: the ``aggregate`` of the records of every rank (in any order), whether
    ``higher_is_better``, and the task ``kinds`` whose records are emitted under ``name``."""

    name: str
    aggregate: Aggregate
    higher_is_better: bool
    kinds: tuple[str, ...]


# A VQA document's kind is its condition set (pathbind_tasks.common.conditions.CONDITION_SETS).
VQA_FULL, VQA_IMAGE_ONLY, VQA_ABLATION, VQA_PARAPHRASE = VQA = ("vqa_full", "vqa_image_only", "vqa_ablation",
                                                                  "vqa_paraphrase")
GROUNDING, FAITHFULNESS, SPECIFICITY = ("grounding",), ("faithfulness",), ("specificity",)
PATHVIEW_ANSWERABLE = ("pathview_grounding", "pathview_choice", "pathview_bins", "pathview_count",
                       "pathview_description")
PATHVIEW = (*PATHVIEW_ANSWERABLE, "pathview_trap")
KINDS = (*VQA, *GROUNDING, *FAITHFULNESS, *PATHVIEW, *SPECIFICITY)


def _item_mean(mean: Callable[..., float], field: str) -> Aggregate:
    """The mean of a record field over the items that have it, summed in id order (the same for 1 or N processes)."""
    return in_id_order(partial(mean, field=field))


METRICS: tuple[Metric, ...] = (
    # VQA with and without the image, and under image ablations (records: vqa)
    Metric("acc_image", partial(va.condition_accuracy, condition="image"), True, VQA),
    Metric("acc_text", partial(va.condition_accuracy, condition="text"), False, (VQA_FULL, VQA_PARAPHRASE)),
    Metric("mg", va.mg, True, (VQA_FULL, VQA_PARAPHRASE)),
    Metric("invalid_rate", va.invalid_rate, False, VQA),
    Metric("by_dimension", va.by_dimension, True, (VQA_FULL, VQA_IMAGE_ONLY)),
    Metric("ci95", va.ci95, True, VQA),
    Metric("reliance", va.reliance, True, (VQA_FULL, VQA_ABLATION)),
    Metric("repeats", va.repeats, True, VQA),
    # Paraphrase flips and text-only consistency (records: vqa, the paraphrase condition set)
    Metric("flip_rate", pa.flip_rate, False, (VQA_PARAPHRASE,)),
    Metric("text_consistency", pa.text_consistency, False, (VQA_PARAPHRASE,)),
    Metric("paraphrase", in_id_order(pa.paraphrase), False, (VQA_PARAPHRASE,)),
    *(metric for condition in ABLATION_CONDITIONS for metric in (
        Metric(f"acc_{condition}", partial(va.condition_accuracy, condition=condition), False, (VQA_ABLATION,)),
        Metric(f"drop_{condition}", partial(va.accuracy_drop, condition=condition), True, (VQA_ABLATION,)))),
    # Attention grounding (records: grounding_records)
    Metric("attn_iou", _item_mean(ga.headline_value, "iou"), True, GROUNDING),
    Metric("attn_precision", _item_mean(ga.headline_value, "precision"), True, GROUNDING),
    Metric("attn_recall", _item_mean(ga.headline_value, "recall"), True, GROUNDING),
    Metric("eff_support", _item_mean(ga.headline_value, "eff_support"), False, GROUNDING),
    Metric("cross_query_r", _item_mean(ga.headline_value, "cross_query_r"), False, GROUNDING),
    Metric("pixel_ap", _item_mean(ga.headline_value, "pixel_ap"), True, GROUNDING),
    Metric("attn_ci", in_id_order(ga.cluster_intervals), True, GROUNDING),
    Metric("q_sweep", in_id_order(ga.q_sweep), True, GROUNDING),
    Metric("layer_sweep", in_id_order(ga.layer_sweep), True, GROUNDING),
    Metric("overlap_controls", in_id_order(ga.overlap_controls), True, GROUNDING),
    Metric("lost_items", ga.lost_items, False, GROUNDING),
    # Causal faithfulness of heat maps (records: faithfulness_records)
    Metric("attn_occlusion_rho", _item_mean(fa.mean, "attn_occlusion_rho"), True, FAITHFULNESS),
    Metric("attn_abs_delta_rho", _item_mean(fa.mean, "attn_abs_delta_rho"), True, FAITHFULNESS),
    Metric("causal_l1", _item_mean(fa.mean, "causal_l1"), True, FAITHFULNESS),
    Metric("causal_amim", _item_mean(fa.mean, "causal_amim"), True, FAITHFULNESS),
    Metric("attn_amim", _item_mean(fa.mean, "attn_amim"), True, FAITHFULNESS),
    Metric("pointing_hit", _item_mean(fa.mean, "pointing_hit"), True, FAITHFULNESS),
    Metric("pointing_tie", _item_mean(fa.mean, "pointing_tie"), False, FAITHFULNESS),
    Metric("attn_box_ap", _item_mean(fa.mean, "attn_box_ap"), True, FAITHFULNESS),
    Metric("causal_box_ap", _item_mean(fa.mean, "causal_box_ap"), True, FAITHFULNESS),
    Metric("insertion_auc", _item_mean(fa.mean, "insertion_auc"), True, FAITHFULNESS),
    Metric("deletion_auc", _item_mean(fa.mean, "deletion_auc"), False, FAITHFULNESS),
    Metric("text_agreement", _item_mean(fa.mean, "text_agreement"), False, FAITHFULNESS),
    Metric("control_boxes", in_id_order(fa.control_box_masses), True, FAITHFULNESS),
    Metric("faith_ci", in_id_order(fa.intervals), True, FAITHFULNESS),
    Metric("perm_tests", in_id_order(fa.permutation_tests), False, FAITHFULNESS),
    Metric("verdict", in_id_order(fa.verdict), True, FAITHFULNESS),
    Metric("faith_lost", fa.lost_counts, False, FAITHFULNESS),
    Metric("attribution", in_id_order(fmethods.method_table), True, FAITHFULNESS),  # the seed's Tables 2 and 3
    Metric("roi_deletion", in_id_order(fmethods.roi_deletion), True, FAITHFULNESS),
    # PathView-Bench (records: pathbind_tasks.common.pathview)
    Metric("dice", pv.dice, True, ("pathview_grounding",)),
    Metric("accuracy", pv.accuracy, True, ("pathview_choice",)),
    Metric("macro_f1", pv.macro_f1, True, ("pathview_bins",)),
    Metric("mae", pv.mae, False, ("pathview_count",)),
    Metric("entity_recall", pv.entity_recall, True, ("pathview_description",)),
    Metric("srr", pv.refusal_rate, True, ("pathview_trap",)),  # on a trap a refusal is the safe answer
    Metric("false_refusal_rate", pv.refusal_rate, False, PATHVIEW_ANSWERABLE),
    Metric("invalid_rate", pv.invalid_rate, False, PATHVIEW),
    Metric("ci95", pv.ci95, True, PATHVIEW),
    # The PathVG expression specificity judge (records: pathbind_tasks.common.specificity)
    Metric("specific_rate", sp.specific_rate, True, SPECIFICITY),
    Metric("invalid_rate", sp.invalid_rate, False, SPECIFICITY),
    Metric("judgements", sp.judgements, True, SPECIFICITY),
    # Every task: the rows read, evaluated and dropped (its ledger, not its records)
    Metric("accounting", accounting, True, KINDS),
)
# The lists a task YAML can name: one per kind, and `vqa` for the VQA YAML every condition set shares.
METRIC_LISTS = {"vqa": VQA, **{kind: (kind,) for kind in KINDS}}


def declared(*kinds: str) -> tuple[Metric, ...]:
    """The metrics emitted for any of ``kinds``, in declaration order; ValueError naming the known kinds otherwise."""
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise ValueError(f"unknown metric kind {', '.join(unknown)}; known: {', '.join(KINDS)}")
    return tuple(metric for metric in METRICS if set(kinds) & set(metric.kinds))


@cache  # asked once per document; METRICS is fixed at import
def names(kind: str) -> tuple[str, ...]:
    """The metric names a ``process_results`` of ``kind`` emits its record under."""
    return tuple(metric.name for metric in declared(kind))


def metric_list(*kinds: str) -> list[dict[str, Any]]:
    """lmms-eval's ``metric_list`` entries of the metrics of ``kinds``."""
    return [{"metric": m.name, "aggregation": m.aggregate, "higher_is_better": m.higher_is_better}
            for m in declared(*kinds)]


def __getattr__(name: str) -> list[dict[str, Any]]:
    # `metric_list: !function pathbind_tasks.common.metrics.<name>`: a fresh list for each task config.
    if name not in METRIC_LISTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return metric_list(*METRIC_LISTS[name])
