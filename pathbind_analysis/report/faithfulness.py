"""Causal faithfulness of heat maps: the metrics table, the two-axis plot, the per-method tables and overlays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathbind_analysis.report.attribution import attribution_tables
from pathbind_analysis.report.attribution_overlays import attribution_overlays
from pathbind_analysis.report.document import Cell, Figure, Note, Section, Table
from pathbind_analysis.report.figures import colour, new_figure, save
from pathbind_analysis.report.fmt import finite
from pathbind_analysis.report.runs import Run

X_METRIC = "attn_occlusion_rho"  # does attention rank patches as occluding them does?
Y_METRIC = "causal_amim"  # share of the causal (occlusion) effect that falls inside the expert box


def faithfulness_section(runs: list[Run], out: Path, overlays: int = 0) -> Section:
    section = Section("Causal faithfulness of heat maps",
                      "A heat map is faithful only if the model uses the image and its attention tracks causal "
                      f"importance: right of ρ = 0 and high on the causal-mass axis. x: {X_METRIC}, y: {Y_METRIC}.")
    tasks = sorted({task for run in runs for task in run.results if "faithfulness" in task})
    if not tasks:
        section.blocks.append(Note("no run has a faithfulness task (*faithfulness*): skipped"))
        return section
    section.blocks.append(_table(runs, tasks))
    section.blocks.append(_two_axis_figure(runs, tasks, out))
    section.blocks += attribution_tables(runs, tasks)
    section.blocks += attribution_overlays(runs, tasks, out, overlays)
    unplaced = [f"{run.name} on {task} ({_verdict(run.results[task])})" for task in tasks for run in runs
                if task in run.results and not _placed(run, task)]
    if unplaced:
        section.blocks.append(Note(f"not placed on the plot (no finite {X_METRIC} or {Y_METRIC}): "
                                   + "; ".join(unplaced)))
    return section


def _table(runs: list[Run], tasks: list[str]) -> Table:
    rows = []
    for task in tasks:
        for run in (r for r in runs if task in r.results):
            shown = {k: v for k, v in run.results[task].items() if not isinstance(v, dict | list)}
            rows.append([Cell(run.name), Cell(task), Cell(_verdict(run.results[task])),
                         Cell("; ".join(f"{k} {_value(v)}" for k, v in shown.items()))])
    return Table("Faithfulness metrics (every scalar and verdict the task reports)",
                 ["Model", "task", "verdict", "metrics"], rows)


def _verdict(results: dict[str, Any]) -> str:
    """The task's two-axis verdict ("uses the image; attention tracks causal importance"), or "-"."""
    verdict = results.get("verdict")
    if not isinstance(verdict, dict):
        return "-"
    return "; ".join(str(verdict[k]) for k in ("image", "attention") if k in verdict)


def _placed(run: Run, task: str) -> bool:
    return finite(run.metric(task, X_METRIC)) and finite(run.metric(task, Y_METRIC))


def _value(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _two_axis_figure(runs: list[Run], tasks: list[str], out: Path) -> Figure | Note:
    points = [(run.name, task, run.metric(task, X_METRIC), run.metric(task, Y_METRIC), run.metric(task, "faith_ci"))
              for task in tasks for run in runs if _placed(run, task)]
    if not points:
        return Note(f"no run reports finite {X_METRIC} and {Y_METRIC}: two-axis plot skipped")
    figure = new_figure(5.5, 4.2)
    ax = figure.subplots()
    ax.axvline(0, color="0.6", linewidth=1, linestyle=":")
    for i, (name, task, x, y, intervals) in enumerate(points):
        ax.scatter([x], [y], color=colour(i), s=60, zorder=3)
        ax.errorbar([x], [y], xerr=_reach(x, intervals, X_METRIC), yerr=_reach(y, intervals, Y_METRIC), fmt="none",
                    ecolor=colour(i), capsize=3, linewidth=1, zorder=2)
        ax.annotate(name if len(tasks) == 1 else f"{name}\n{task}", (x, y), textcoords="offset points",
                    xytext=(6, 4), fontsize=8)
    heights = [y for *_, y, _ in points]
    # A mass is a share: keep the whole [0, 1] range in view so one model is not magnified into a spread.
    ax.set(xlim=(-1.05, 1.05), ylim=(min(0.0, *heights), 1.05 * max(1.0, *heights)),
           xlabel=f"attention–occlusion Spearman ρ ({X_METRIC})", ylabel=f"causal mass in the box ({Y_METRIC})",
           title="Is the heat map faithful?")
    ax.text(0.98, 0.98, "faithful ↗", transform=ax.transAxes, ha="right", va="top", fontsize=8, color="0.4")
    return Figure(save(figure, out / "faithfulness.png"), "Each model placed by how well its attention tracks "
                  "occlusion (x) and how much of the causal effect lies in the expert box (y), with the 95% intervals "
                  "of both (faith_ci: resampling the task's clusters, images by default); a point without bars has "
                  "no interval (fewer than two clusters).")


def _reach(value: float, intervals: Any, metric: str) -> list[list[float]] | None:
    """The error bar's lengths below and above ``value`` from the metric's interval in ``faith_ci``, or None."""
    interval = intervals.get(metric) if isinstance(intervals, dict) else None
    if not (isinstance(interval, dict) and finite(interval.get("low")) and finite(interval.get("high"))):
        return None
    return [[max(value - interval["low"], 0.0)], [max(interval["high"] - value, 0.0)]]
