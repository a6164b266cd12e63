"""General → pathology-tuned pairs in the paper's Figure 4 form: MG, IoU and recall, green when tuning raised it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathbind_analysis.pairs import adjust, compare
from pathbind_analysis.report.document import Figure, Note, Section, Table
from pathbind_analysis.report.figures import new_figure, save
from pathbind_analysis.report.fmt import cells, finite, number
from pathbind_analysis.report.grounding import grounding_tasks
from pathbind_analysis.report.runs import ReportError, Run

UP, DOWN, FLAT = "#2ca02c", "#d62728", "0.6"
PAIRED_TESTS = {"n_permutations": 10000, "seed": 0}  # pathbind pairs' defaults


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
    section = Section("General → pathology-tuned pairs",
                      "Per pair, the tuned model's Multimodal Gain (points), attention IoU and recall (%) against "
                      "its general model's (green: tuned above, red: below), then the paired changes from the "
                      "sample logs as `pathbind pairs` computes them: sign-flip tests that flip the tasks' clusters "
                      "(images by default) and the 95% intervals of the changes they do not reject, p-values "
                      "Holm-adjusted across every row of the table.")
    panels = [_panel_values(pairs, measure) for measure in ("mg", "attn_iou", "attn_recall")]
    rows = [cells([f"{g.name} → {t.name}", *(_delta(values[i]) for _, values in panels)])
            for i, (g, t) in enumerate(pairs)]
    section.blocks.append(Table("Pairs", ["pair", *(label for label, _ in panels)], rows))
    section.blocks.append(_paired_tests(pairs))
    if all(a is None or b is None for _, values in panels for a, b in values):
        section.blocks.append(Note("no pair has a measure both models report: pair plot skipped"))
        return section
    section.blocks.append(_figure(pairs, panels, out))
    return section


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


Values = list[tuple[float | None, float | None]]  # per pair (general, tuned); None: not reported by both


def _panel_values(pairs: list[tuple[Run, Run]], measure: str) -> tuple[str, Values]:
    """The panel's label and per pair (general, tuned) values from the first task both runs report."""
    values: Values = []
    for general, tuned in pairs:
        task = _shared_task(general, tuned, measure)
        scale = 1.0 if measure == "mg" else 100.0
        values.append((_scaled(general.metric(task, measure), scale), _scaled(tuned.metric(task, measure), scale))
                      if task else (None, None))
    return {"mg": "ΔMG", "attn_iou": "ΔIoU", "attn_recall": "ΔRecall"}[measure], values


def _shared_task(general: Run, tuned: Run, measure: str) -> str | None:
    tasks = grounding_tasks([general, tuned]) if measure != "mg" else sorted(general.results)
    preferred = ["pathbind_vqa", *tasks] if measure == "mg" else tasks
    return next((t for t in preferred if finite(general.metric(t, measure)) and finite(tuned.metric(t, measure))),
                None)


def _scaled(value: Any, scale: float) -> float | None:
    return float(value) * scale if finite(value) else None


def _delta(pair: tuple[float | None, float | None]) -> str:
    general, tuned = pair
    if general is None or tuned is None:
        return "–"
    return f"{number(general)} → {number(tuned)} ({tuned - general:+.1f})"


def _figure(pairs: list[tuple[Run, Run]], panels: list[tuple[str, Values]], out: Path) -> Figure:
    figure = new_figure(3.2 * len(panels), 3.6)
    for ax, (label, values) in zip(figure.subplots(1, len(panels)), panels, strict=True):
        for (general, tuned), (general_run, tuned_run) in zip(values, pairs, strict=True):
            if general is None or tuned is None:
                continue
            line = UP if tuned > general else DOWN if tuned < general else FLAT
            ax.plot([0, 1], [general, tuned], color=line, marker="o")
            for x, value, run, align in ((0, general, general_run, "right"), (1, tuned, tuned_run, "left")):
                ax.annotate(run.name, (x, value), textcoords="offset points", xytext=(-5 if x == 0 else 5, 0),
                            fontsize=7, va="center", ha=align)
        if all(general is None or tuned is None for general, tuned in values):
            ax.text(0.5, 0.5, "not reported by both\nmodels of any pair", ha="center", va="center",
                    transform=ax.transAxes, color="0.4")
            ax.set_yticks([])
        ax.set_xticks([0, 1], ["general", "tuned"])
        ax.set_xlim(-1.0, 2.1)  # room for the model names at both ends
        ax.set(title=label.removeprefix("Δ"), ylabel="points" if label == "ΔMG" else "%")
    figure.suptitle("General → pathology-tuned")
    return Figure(save(figure, out / "pairs.png"), "Each line joins a general model (left) to its tuned descendant "
                  "(right): green where tuning raised the measure, red where it lowered it.")
