"""General → pathology-tuned pairs in the paper's Figure 4 form: MG on the public benchmarks and on PathBind, IoU and
recall on PathBind-Grounding, green when tuning raised it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathbind_analysis.pairs import adjust, compare
from pathbind_analysis.report.document import Figure, Note, Section, Table
from pathbind_analysis.report.figures import new_figure, save
from pathbind_analysis.report.fmt import cells, finite, number
from pathbind_analysis.report.grounding import grounding_tasks
from pathbind_analysis.report.paper_tables import (
    Column,
    average,
    other_tasks,
    pathbind_columns,
    public_columns,
    task_columns,
)
from pathbind_analysis.report.runs import ReportError, Run

UP, DOWN, FLAT = "#2ca02c", "#d62728", "0.6"
PAIRED_TESTS = {"n_permutations": 10000, "seed": 0}  # pathbind pairs' defaults
# PathBind-Grounding as the paper's Figure 4 pools it (testA + testB), then either split alone.
GROUNDING_ORDER = (("pathbind_grounding_testa", "pathbind_grounding_testb"), ("pathbind_grounding_testa",),
                   ("pathbind_grounding_testb",))


def resolve_pairs(text: str, runs: list[Run]) -> list[tuple[Run, Run]]:
    """``A:B,C:D`` where each side is a run folder (as given or resolved) or a model name shown in the report."""
    by_key = {key: run for run in runs for key in (run.name, str(run.path), str(run.path.resolve()))}
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        general, sep, tuned = item.rpartition(":")
        if not sep or not general or not tuned:
            raise ReportError(f"--pairs: {item!r} is not GENERAL:TUNED")
        pairs.append((_find(general, by_key, runs), _find(tuned, by_key, runs)))
    return pairs


def _find(side: str, by_key: dict[str, Run], runs: list[Run]) -> Run:
    run = by_key.get(side) or by_key.get(str(Path(side).resolve()))
    if run is None:
        raise ReportError(f"--pairs: {side!r} is neither a given run folder nor a model name; "
                          f"models: {', '.join(r.name for r in runs)}")
    return run


def pairs_section(pairs: list[tuple[Run, Run]], out: Path) -> Section:
    section = Section("General → pathology-tuned pairs (Figure 4)",
                      "Per pair, the general and the tuned model's (a) Multimodal Gain (points) averaged over the "
                      "public benchmarks (Table 1's columns), (b) MG averaged over PathBind-VQA and PathBind-PTA's "
                      "dimensions (Table 2's), (c) attention IoU and (d) recall (%) on PathBind-Grounding (green: "
                      "tuned above, red: below), each over what both models report; then the paired changes from "
                      "the sample logs as `pathbind pairs` computes them: sign-flip tests that flip the tasks' "
                      "clusters (images by default) and the 95% intervals of the changes they do not reject, "
                      "p-values Holm-adjusted across every row of the table.")
    panels = figure_4_panels(pairs)
    rows = [cells([f"{g.name} → {t.name}", *(_delta(panel.values[i]) for panel in panels)])
            for i, (g, t) in enumerate(pairs)]
    section.blocks.append(Table("Pairs", ["pair", *(f"({panel.key}) Δ{panel.title}" for panel in panels)], rows))
    section.blocks += [Note(f"({panel.key}) {panel.title}: {'; '.join(used)}") for panel in panels
                       if (used := panel.used(pairs))]
    section.blocks.append(_paired_tests(pairs))
    drawn = [panel for panel in panels if panel.drawn()]
    section.blocks += [Note(f"Figure 4 ({panel.key}) {panel.title} omitted: {panel.missing}") for panel in panels
                       if not panel.drawn()]
    if drawn:
        section.blocks.append(_figure(pairs, drawn, out))
    return section


@dataclass
class Panel:
    """One panel of Figure 4: per pair the (general, tuned) values (None: not reported by both) and the tasks
    they come from."""

    key: str
    title: str
    unit: str
    values: list[tuple[float | None, float | None]]
    tasks: list[list[str]]
    missing: str  # why the panel has no pair, in words
    # per pair, the (general, tuned) 95% intervals: stored for a value of one task or dimension, None for an average
    intervals: list[tuple[Any, ...]]

    def drawn(self) -> bool:
        return any(general is not None and tuned is not None for general, tuned in self.values)

    def used(self, pairs: list[tuple[Run, Run]]) -> list[str]:
        """Per pair with values, the tasks behind them."""
        return [f"{g.name} → {t.name}: {', '.join(tasks)}" for (g, t), tasks, (a, b) in
                zip(pairs, self.tasks, self.values, strict=True) if tasks and a is not None and b is not None]


def figure_4_panels(pairs: list[tuple[Run, Run]]) -> list[Panel]:
    """The four panels of the paper's Figure 4; where no run of a pair has PathBind-VQA/PTA, panel (b) is the VQA
    tasks outside Tables 1 and 2 (the demo's), so titled; where a pair has no PathBind-Grounding, panels (c) and (d)
    take the first grounding task both models report. Each panel names its tasks."""
    def others(runs: list[Run]) -> list[Column]:
        return [column for task in other_tasks(runs) for column in task_columns(runs, task, task)]

    runs = [run for pair in pairs for run in pair]
    pathbind = (("MG, PathBind VQA + PTA", pathbind_columns) if pathbind_columns(runs)
                else ("MG, other VQA tasks", others))
    return [_mg_panel(pairs, "a", "MG, public benchmarks", public_columns), _mg_panel(pairs, "b", *pathbind),
            _grounding_panel(pairs, "c", "IoU, PathBind-Grounding", "attn_iou"),
            _grounding_panel(pairs, "d", "Recall, PathBind-Grounding", "attn_recall")]


def _mg_panel(pairs: list[tuple[Run, Run]], key: str, title: str,
              columns_of: Callable[[list[Run]], list[Column]]) -> Panel:
    """Each model's MG averaged over the columns both models of its pair report (as the tables' Avg.)."""
    values, tasks, intervals = [], [], []
    for general, tuned in pairs:
        shared = [c for c in columns_of([general, tuned])
                  if finite(c.value(general, "mg")) and finite(c.value(tuned, "mg"))]
        values.append((average(general, shared, "mg"), average(tuned, shared, "mg")) if shared else (None, None))
        tasks.append(list(dict.fromkeys(c.task for c in shared)))
        intervals.append(tuple(shared[0].interval(run, "mg") if len(shared) == 1 else None
                               for run in (general, tuned)))
    return Panel(key, title, "points", values, tasks, "no pair has a task of it with MG under both models", intervals)


def _grounding_panel(pairs: list[tuple[Run, Run]], key: str, title: str, measure: str) -> Panel:
    """The measure (%) on PathBind-Grounding: over the items of both splits, as the paper's figure (each split's mean
    weighted by its scored items); else one split; else the first grounding task both models report."""
    values: list[tuple[float | None, float | None]] = []
    tasks, intervals = [], []
    for general, tuned in pairs:
        found = grounding_tasks([general, tuned])
        candidates = [*GROUNDING_ORDER, *((task,) for task in found)]
        chosen = next((group for group in candidates if all(t in found for t in group)
                       and all(_pooled(run, group, measure) is not None for run in (general, tuned))), ())
        values.append((_pooled(general, chosen, measure), _pooled(tuned, chosen, measure)) if chosen else (None, None))
        tasks.append(list(chosen))
        intervals.append(tuple(_scaled((run.metric(chosen[0], "attn_ci") or {}).get(measure)) if len(chosen) == 1
                               else None for run in (general, tuned)))
    return Panel(key, title, "%", values, tasks,
                 f"no pair has a grounding task with a finite {measure} under both models", intervals)


def _scaled(interval: Any) -> Any:
    """A grounding interval (fractions) in percent, as the panel's values."""
    return {**interval, "low": 100 * interval["low"], "high": 100 * interval["high"]} if isinstance(
        interval, dict) else None


def _pooled(run: Run, tasks: tuple[str, ...], measure: str) -> float | None:
    """The mean (%) of ``measure`` over the scored items of ``tasks`` together (one task: its own mean)."""
    means = [run.metric(task, measure) for task in tasks]
    counts = [(run.metric(task, "lost_items") or {}).get("scored") for task in tasks]
    if len(tasks) == 1 and finite(means[0]):
        return 100.0 * means[0]
    scored = [c for c in counts if isinstance(c, int) and c > 0]
    if not all(finite(m) for m in means) or len(scored) < len(tasks):
        return None
    return 100.0 * sum(m * c for m, c in zip(means, scored, strict=True)) / sum(scored)


def _paired_tests(pairs: list[tuple[Run, Run]]) -> Table | Note:
    """``pathbind pairs``' rows for the VQA and grounding tasks both runs of a pair report."""
    rows = []
    for general, tuned in pairs:
        shared = [task for task in general.results if task in tuned.results]
        tasks = {"vqa": [t for t in shared if finite(general.metric(t, "acc_image"))],
                 "grounding": [t for t in grounding_tasks([general, tuned]) if t in shared]}
        try:
            compared = compare(general.path, tuned.path, tasks, PAIRED_TESTS)
            rows += [{**row, "general": general.name, "tuned": tuned.name} for row in compared]
        except ValueError as exc:
            return Note(f"paired tests not computed: {exc}")
    if not rows:
        return Note("paired tests not computed: no pair shares a VQA or grounding task")
    family = adjust(rows, "this table")
    return Table(f"Paired changes, tuned − general; p (Holm) adjusted across {family}",
                 ["pair", "task", "change", "95% CI", "clusters", "design effect", "p", "p (Holm)", "n", "warning"],
                 [cells([f"{row['general']} → {row['tuned']}", row["task"], row["measure"] + " " + number(row["delta"]),
                         f"[{number(row['ci95']['low'])}, {number(row['ci95']['high'])}]",
                         f"{row['ci95']['clusters']} ({row['ci95']['cluster']})",
                         _fixed(row["ci95"]["design_effect"], ".2f"), _fixed(row["p"], ".3g"),
                         _fixed(row["p_holm"], ".3g"), str(row["n"]), row["ci95"]["warning"] or "–"])
                  for row in rows])


def _fixed(value: float, spec: str) -> str:
    return format(value, spec) if finite(value) else "n/a"


def _delta(pair: tuple[float | None, float | None]) -> str:
    general, tuned = pair
    if general is None or tuned is None:
        return "–"
    return f"{number(general)} → {number(tuned)} ({tuned - general:+.1f})"


def _figure(pairs: list[tuple[Run, Run]], panels: list[Panel], out: Path) -> Figure:
    figure = new_figure(3.4 * len(panels), 4.0)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        for (general, tuned), (general_run, tuned_run), bounds in zip(panel.values, pairs, panel.intervals,
                                                                       strict=True):
            if general is None or tuned is None:
                continue
            line = UP if tuned > general else DOWN if tuned < general else FLAT
            ax.plot([0, 1], [general, tuned], color=line, marker="o")
            for x, value, interval in ((0, general, bounds[0]), (1, tuned, bounds[1])):
                if isinstance(interval, dict) and finite(interval.get("low")) and finite(interval.get("high")):
                    ax.errorbar(x, value, yerr=[[value - interval["low"]], [interval["high"] - value]], color=line,
                                capsize=3)
            for x, value, run, align in ((0, general, general_run, "right"), (1, tuned, tuned_run, "left")):
                ax.annotate(run.name, (x, value), textcoords="offset points", xytext=(-5 if x == 0 else 5, 0),
                            fontsize=7, va="center", ha=align)
        ax.set_xticks([0, 1], ["general", "tuned"])
        ax.set_xlim(-1.0, 2.1)  # room for the model names at both ends
        tasks = "\n".join(textwrap.wrap(", ".join(sorted({task for used in panel.tasks for task in used})), 40))
        ax.set_title(f"({panel.key}) {panel.title}\n{tasks}", fontsize=8)
        ax.set(ylabel=panel.unit)
    figure.suptitle("General → pathology-tuned")
    return Figure(save(figure, out / "pairs.png"), "Figure 4 form: each line joins a general model (left) to its tuned "
                  "descendant (right), green where tuning raised the measure, red where it lowered it; each panel "
                  "names the tasks it averages, and a panel no pair reports is left out (see the notes). Error bars: "
                  "the 95% interval the run stores for a value of one task or dimension; an average over several "
                  "has none (their items differ: no one resampling covers it), so its point stands alone; the "
                  "paired changes' intervals are in the table above.")
