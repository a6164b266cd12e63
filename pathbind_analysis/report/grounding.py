"""Attention grounding in the paper's Table 3 form (IoU, Pre, Rec in %, with 95% CIs), diagnostics and sweeps."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pathbind.lmms_output import sample_record, task_samples
from pathbind.summary import coverage_flag
from pathbind_analysis.report.document import Cell, Figure, Note, Section, Table
from pathbind_analysis.report.figures import colour, new_figure, save
from pathbind_analysis.report.fmt import best_marks, cells, finite, number
from pathbind_analysis.report.runs import Run
from pathbind_metrics import resampling as rs
from pathbind_tasks.common.clusters import cluster_keys
from pathbind_tasks.common.grounding_records import Q_DEFAULT

# Table 3 order: PathBind-Grounding, then PathVG, then the demo; any other task with attn_iou follows by name.
KNOWN = ("pathbind_grounding_testa", "pathbind_grounding_testb", "pathbind_pathvg_testa", "pathbind_pathvg_testb",
         "pathvg_testa", "pathvg_testb", "pathbind_demo_grounding")
HEADLINE = (("attn_iou", "IoU"), ("attn_precision", "Pre"), ("attn_recall", "Rec"))
REGION = (("iou", "IoU"), ("precision", "Precision"), ("recall", "Recall"))
LAYER_ORDER = ("shallow", "mid", "deep", "all")


def grounding_tasks(runs: list[Run]) -> list[str]:
    found = {task for run in runs for task, metrics in run.results.items() if "attn_iou" in metrics}
    return [t for t in KNOWN if t in found] + sorted(found - set(KNOWN))


def grounding_section(runs: list[Run], out: Path) -> Section:
    section = Section("Attention grounding",
                      f"Overlap (%) of each model's top-{Q_DEFAULT:.0%} entity-attention mask (middle-third layers) "
                      "with the expert box, with 95% intervals in brackets that resample images (the clusters counted "
                      "there); n/a: no item could be scored "
                      "(reasons in the notes). Bold: best of a column.")
    tasks = grounding_tasks(runs)
    if not tasks:
        section.blocks.append(Note("no run has a grounding task (metric attn_iou): skipped"))
        return section
    ran = [run for run in runs if any(task in run.results for task in tasks)]
    section.blocks += [_table_3(ran, tasks), _diagnostics(ran, tasks)]
    section.blocks += [Note(f"{run.name}: no grounding task in its results ({run.path})")
                       for run in runs if run not in ran]
    section.blocks += _lost_notes(ran, tasks)
    for task in tasks:
        section.blocks += [_q_sweep_figure(ran, task, out), _layer_figure(ran, task, out)]
    return section


def _table_3(runs: list[Run], tasks: list[str]) -> Table:
    columns = [(task, metric, label) for task in tasks for metric, label in HEADLINE]
    values = [[run.metric(task, metric) for task, metric, _ in columns] for run in runs]
    marks = [best_marks([None if run.baseline else row[i] for run, row in zip(runs, values, strict=True)])
             for i in range(len(columns))]
    rows = []
    for r, run in enumerate(runs):
        texts = [_with_interval(run, task, metric) + _flag(run, task, metric) for task, metric, _ in columns]
        rows.append([Cell(run.name), *cells(texts, [marks[i][r] for i in range(len(columns))])])
    return Table("Grounding (Table 3 form)", ["Model", *(f"{task} {label}" for task, _, label in columns)], rows)


def _flag(run: Run, task: str, metric: str) -> str:
    """The task's coverage flag, once per task: beside its first headline."""
    flag = coverage_flag(run.metric(task, "accounting")) if metric == HEADLINE[0][0] else ""
    return f" [{flag}]" if flag else ""


def _with_interval(run: Run, task: str, metric: str) -> str:
    value = run.metric(task, metric)
    interval = (run.metric(task, "attn_ci") or {}).get(metric) or {}
    low, high = interval.get("low"), interval.get("high")
    if not finite(value) or not (finite(low) and finite(high)):
        return number(value, scale=100)
    unit = interval.get("cluster", "item")  # what the interval resampled, and how many
    return (f"{number(value, scale=100)} [{number(low, scale=100)}, {number(high, scale=100)}; "
            f"{interval.get('clusters', '?')} {unit}s]")


def _diagnostics(runs: list[Run], tasks: list[str]) -> Table:
    rows = []
    for run in runs:
        for task in (t for t in tasks if t in run.results):
            lost = run.metric(task, "lost_items") or {}
            rows.append(cells([run.name, task, _two(run.metric(task, "eff_support")),
                               _two(run.metric(task, "cross_query_r")), _two(run.metric(task, "pixel_ap")),
                               f"{lost.get('scored', '?')}/{lost.get('items', '?')}"]))
    return Table("Grounding diagnostics: effective support N_eff/N (1 = uniform), cross-query r (high = attention "
                 "ignores the query), pixel-AP", ["Model", "task", "N_eff/N", "cross-query r", "pixel-AP",
                                                  "scored/items"], rows)


def _two(value: Any) -> str:
    return f"{value:.2f}" if finite(value) else number(value)


def _lost_notes(runs: list[Run], tasks: list[str]) -> list[Note]:
    notes = []
    for run in runs:
        for task in (t for t in tasks if t in run.results):
            lost = dict(run.metric(task, "lost_items") or {})
            items, scored = lost.pop("items", None), lost.pop("scored", None)
            if lost:
                reasons = "; ".join(f"{reason} ({count})" for reason, count in lost.items())
                notes.append(Note(f"{run.name} on {task}: {scored} of {items} items scored; not scored: {reasons}"))
    return notes


def _q_sweep_figure(runs: list[Run], task: str, out: Path) -> Figure | Note:
    sweeps = {run.name: run.metric(task, "q_sweep") or {} for run in runs if task in run.results}
    if not any(finite(v) for sweep in sweeps.values() for by in sweep.values() for v in by.values()):
        return Note(f"{task}: no finite threshold-sweep value (q_sweep): figure skipped")
    logged = {run.name: logged_records(run, task) for run in runs if run.name in sweeps}
    figure = new_figure(10, 3.2)
    for ax, (measure, label) in zip(figure.subplots(1, 3), REGION, strict=True):
        for i, (name, sweep) in enumerate(sweeps.items()):
            qs = sorted(sweep, key=float)
            values = [100 * sweep[q].get(measure, float("nan")) for q in qs]
            ax.plot([float(q) for q in qs], values, marker="o", color=colour(i), label=_label(name, values))
            if records := logged[name]:
                bands = [item_interval(records, [r[measure].get(q, math.nan) for r in records]) for q in qs]
                ax.fill_between([float(q) for q in qs], *zip(*bands, strict=True), color=colour(i), alpha=0.2,
                                linewidth=0)
        ax.axvline(Q_DEFAULT, color="0.6", linestyle=":", linewidth=1)
        ax.set(title=label, xlabel="attended fraction q", ylabel=f"{label} (%)", ylim=(0, 100))
    figure.axes[0].legend(fontsize=8)
    figure.suptitle(f"{task}: threshold sweep (dotted: the default q = {Q_DEFAULT})")
    return Figure(save(figure, out / f"q_sweep_{task}.png"), f"{task}: IoU, precision and recall of the top-q mask "
                  "against the box at each attended fraction q; a model absent from a panel could not be scored. "
                  + intervals_said(logged, "Bands"))


def _layer_figure(runs: list[Run], task: str, out: Path) -> Figure | Note:
    sweeps = {run.name: run.metric(task, "layer_sweep") or {} for run in runs if task in run.results}
    layers = [name for name in LAYER_ORDER if any(name in s for s in sweeps.values())]
    layers += sorted({name for s in sweeps.values() for name in s} - set(layers))
    if not any(finite(s.get(layer, {}).get("iou")) for s in sweeps.values() for layer in layers):
        return Note(f"{task}: no finite layer-aggregation value (layer_sweep): figure skipped")
    logged = {run.name: logged_records(run, task) for run in runs if run.name in sweeps}
    figure = new_figure(max(5.0, 1.2 * len(layers) + 2), 3.2)
    ax = figure.subplots()
    width = 0.8 / max(len(sweeps), 1)
    for i, (name, sweep) in enumerate(sweeps.items()):
        heights = [100 * sweep.get(layer, {}).get("iou", float("nan")) for layer in layers]
        xs = [x + (i - (len(sweeps) - 1) / 2) * width for x in range(len(layers))]
        ax.bar(xs, heights, width, color=colour(i), label=_label(name, heights))
        if records := logged[name]:
            lows, highs = zip(*(item_interval(records, [r["layers"].get(layer, {}).get("iou", math.nan)
                                                        for r in records]) for layer in layers), strict=True)
            shown = [k for k in range(len(layers)) if finite(heights[k]) and finite(lows[k])]
            ax.errorbar([xs[k] for k in shown], [heights[k] for k in shown], fmt="none", ecolor="black", capsize=3,
                        yerr=[[heights[k] - lows[k] for k in shown], [highs[k] - heights[k] for k in shown]])
    ax.set_xticks(range(len(layers)), [f"{layer} third" if layer in LAYER_ORDER[:3] else f"{layer} layers"
                                       for layer in layers])
    ax.set(ylabel=f"IoU at q = {Q_DEFAULT} (%)", ylim=(0, 100), title=f"{task}: layer aggregation")
    ax.legend(fontsize=8)
    return Figure(save(figure, out / f"layer_sweep_{task}.png"), f"{task}: IoU of maps averaged over the shallow, "
                  "middle (the default), deep third and all decoder layers; a missing bar could not be scored. "
                  + intervals_said(logged, "Error bars"))


def logged_records(run: Run, task: str) -> list[dict[str, Any]]:
    """The run's grounding item records of ``task`` from its sample logs ([] without them)."""
    try:
        samples = task_samples(run.path, task)
    except ValueError:
        return []
    return [r for r in map(sample_record, samples) if r is not None and isinstance(r.get("iou"), dict)]


def item_interval(records: list[dict[str, Any]], values: list[float]) -> tuple[float, float]:
    """The 95% cluster interval (%) of the mean of ``values`` (one per record; NaN: not scored), as the task's
    ``attn_ci``."""
    keys, cluster = cluster_keys(records)
    interval = rs.mean_interval(values, keys, cluster=cluster, scale=100.0)
    return interval["low"], interval["high"]


def intervals_said(logged: dict[str, list[dict[str, Any]]], kind: str) -> str:
    """What the figure's intervals resample, computed here from the sample logs (the run stores none per point),
    and which models have none."""
    clusters = sorted({cluster_keys(records)[1] for records in logged.values() if records})
    without = [name for name, records in logged.items() if not records]
    said = (f"{kind}: 95% intervals resampling {', '.join(clusters)}s, from the item records of the sample logs "
            "(results.json stores none per point)." if clusters else "")
    return said + (f" No interval for {', '.join(without)}: no sample log of the task (run with --log_samples)."
                   if without else "")


def _label(name: str, values: list[float]) -> str:
    """A legend entry that says why a model has no line or bar."""
    return name if any(finite(v) for v in values) else f"{name} (not scored)"
