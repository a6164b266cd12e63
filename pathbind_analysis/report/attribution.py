"""Causal faithfulness per attribution method: the seed's Table 2 (box measures, each against the shuffled mask)
and Table 3 (rank agreement with the occlusion map) in their form, per model, from the ``attribution`` metric, and
the ROI deletion test of each model."""

from __future__ import annotations

import math
from typing import Any

from pathbind_analysis.report.document import BEST, Cell, Note, Table
from pathbind_analysis.report.fmt import finite
from pathbind_analysis.report.runs import Run

TABLE2 = (("pointing_hit", "PG (%)", 100.0), ("amim", "AMiM", 1.0), ("box_ap", "pixel-AP", 1.0))
SIGNIFICANT = 0.05  # a Δ whose Holm-adjusted p is below it is starred


def attribution_tables(runs: list[Run], tasks: list[str]) -> list[Table | Note]:
    """Tables 2 and 3 and the ROI deletion table over every run's faithfulness tasks that report per method."""
    found = [(run, task, run.metric(task, "attribution")) for task in tasks for run in runs if task in run.results]
    found = [(run, task, table) for run, task, table in found if isinstance(table, dict) and table.get("methods")]
    if not found:
        return [Note("no run reports per-method faithfulness (`attribution`): run with `--model_args attribution=all`"
                     " for the seed's Tables 2 and 3")]
    return [_table2(found), _table3(found), _roi(runs, tasks)]


def _label(run: Run, task: str, tasks: set[str]) -> str:
    return run.name if len(tasks) == 1 else f"{run.name} ({task})"


def _table2(found: list[tuple[Run, str, dict[str, Any]]]) -> Table:
    tasks = {task for _, task, _ in found}
    rows = []
    for run, task, table in found:
        for method, entry in table["methods"].items():
            cells = [Cell(_label(run, task, tasks)), Cell(method)]
            for measure, _, scale in TABLE2:
                value = entry[measure]
                mark = BEST if table.get("best", {}).get(measure) == method else ""
                cells += [Cell(_value(value["mean"], scale), mark), Cell(_delta(value, scale))]
            rows.append([*cells, Cell(str(entry.get("n", 0)))])
    columns = ["Model", "method"]
    for _, name, _ in TABLE2:
        columns += [name, "Δ"]
    return Table("Attribution methods against the expert box (the seed's Table 2): each measure, and Δ = its value "
                 "minus the same map's value against the shuffled mask (other images' boxes); * Holm-adjusted "
                 f"p < {SIGNIFICANT} (one-sided paired permutation test); bold: the best method per measure and model",
                 [*columns, "n"], rows)


def _table3(found: list[tuple[Run, str, dict[str, Any]]]) -> Table:
    tasks = {task for _, task, _ in found}
    rows = []
    for run, task, table in found:
        for method, entry in table["methods"].items():
            rows.append([Cell(_label(run, task, tasks)), Cell(method), Cell(_with_interval(entry["abs_rho"])),
                         Cell(_with_interval(entry["rho"])), Cell(_delta(entry["insertion_auc"], 1.0)),
                         Cell(_delta(entry["deletion_auc"], 1.0)), Cell(_delta(entry["causal_minus_amim"], 1.0)),
                         Cell(entry.get("verdict", "-"))])
    return Table("Attribution methods against the occlusion map (the seed's Table 3): Spearman ρ with |δ| and with "
                 "the signed δ [95% cluster interval]; insertion and deletion AUC gained over the random order; causal "
                 "minus the method's AMiM",
                 ["Model", "method", "ρ vs |δ|", "ρ vs δ", "insertion Δ", "deletion Δ", "causal − AMiM", "verdict"],
                 rows)


def _roi(runs: list[Run], tasks: list[str]) -> Table | Note:
    rows = []
    for task in tasks:
        for run in (r for r in runs if task in r.results):
            roi = run.metric(task, "roi_deletion")
            if isinstance(roi, dict):
                rows.append([Cell(_label(run, task, set(tasks))), Cell(_with_interval(roi)),
                             Cell(_p(roi.get("p"))), Cell(str(roi.get("verdict", "-")))])
    if not rows:
        return Note("no run reports ROI deletion (`roi_deletion`)")
    return Table("ROI deletion, for models that show no attention: the answer margin lost by hiding the expert box "
                 "minus that lost by hiding a random box of its size (nats) [95% cluster interval]",
                 ["Model", "box − random", "p", "verdict"], rows)


def _value(value: Any, scale: float) -> str:
    if not finite(value):
        return "n/a"
    return f"{value * scale:.1f}" if scale != 1.0 else f"{value:.3f}"


def _delta(entry: dict[str, Any], scale: float) -> str:
    delta = entry.get("delta", entry.get("mean"))
    if not isinstance(delta, float) or not math.isfinite(delta):
        return "n/a"
    text = f"{delta * scale:+.1f}" if scale != 1.0 else f"{delta:+.3f}"
    p = entry.get("p_holm", math.nan)
    return text + ("*" if finite(p) and p < SIGNIFICANT else "")


def _with_interval(entry: dict[str, Any]) -> str:
    mean, ci = entry.get("mean"), entry.get("ci") or {}
    if not finite(mean):
        return "n/a"
    low, high = ci.get("low"), ci.get("high")
    bounds = f" [{low:+.3f}, {high:+.3f}]" if finite(low) and finite(high) else " [n/a]"
    return f"{mean:+.3f}{bounds}"


def _p(value: Any) -> str:
    return f"{value:.3g}" if finite(value) else "n/a"
