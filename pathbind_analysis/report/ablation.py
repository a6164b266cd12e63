"""Image ablations in PathBind's forms: Table A.3 (accuracy with a blank image, an image of the same subset and one of
another subset, and their average) and Figure A.1 (accuracy as the image is blurred more and more)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathbind_analysis.report.document import Figure, Note, Table
from pathbind_analysis.report.figures import new_figure, save
from pathbind_analysis.report.fmt import bounds, cells, finite, number
from pathbind_analysis.report.runs import Run

REPLACEMENTS = (("blank", "Blank"), ("swap_same", "Same subset"), ("swap_cross", "Cross subset"))
BLUR = "blur_"


def ablation_tasks(runs: list[Run]) -> list[str]:
    """Tasks some run reports under an image ablation (an ``acc_blank``, ``acc_swap_*`` or ``acc_blur_*``)."""
    conditions = (*(f"acc_{c}" for c, _ in REPLACEMENTS), f"acc_{BLUR}")
    return sorted({task for run in runs for task, metrics in run.results.items()
                   if any(metric.startswith(conditions) for metric in metrics)})


def ablation_blocks(runs: list[Run], out: Path) -> list[Table | Figure | Note]:
    blocks: list[Table | Figure | Note] = []
    for task in ablation_tasks(runs):
        ran = [run for run in runs if task in run.results]
        blocks += [table_a3(ran, task), drop_table(ran, task, list(REPLACEMENTS), "Table A.3"),
                   *figure_a1(ran, task, out), Note(f"{task}: {NO_INTERVAL}")]
    return blocks


NO_INTERVAL = ("the accuracies with the image replaced or blurred (Table A.3, Figure A.1) carry no interval: the task "
               "stores 95% intervals of the accuracy with the image and of each drop (paired over the items answered "
               "under both conditions), not of the ablated accuracies or their average; the drop tables show them.")


def table_a3(runs: list[Run], task: str) -> Table:
    """Model × blank / same subset / cross subset / Avg.: accuracy (%) with the image replaced, the question and
    options unchanged; high values mean the answers do not need the right image."""
    rows = []
    for run in runs:
        values = [run.metric(task, f"acc_{condition}") for condition, _ in REPLACEMENTS]
        mean = sum(values) / len(values) if all(finite(v) for v in values) else None
        rows.append(cells([run.name_on(task), *(number(v) for v in values), number(mean)]))
    return Table(f"Table A.3 form: {task}, accuracy (%) with the image replaced",
                 ["Model", *(label for _, label in REPLACEMENTS), "Avg."], rows)


def drop_table(runs: list[Run], task: str, conditions: list[tuple[str, str]], form: str) -> Table:
    """The accuracy with the image and each condition's drop (points: with the image − with it ablated), each with
    its 95% interval from the task's ``ci95``."""
    found = [run.metric(task, "ci95") or {} for run in runs]
    clusters = sorted({str(i["cluster"]) for intervals in found for i in intervals.values()
                       if isinstance(i, dict) and i.get("cluster")})
    rows = [cells([run.name, *(f"{number(run.metric(task, metric))} {bounds(intervals.get(metric))}"
                               for metric in ("acc_image", *(f"drop_{c}" for c, _ in conditions)))])
            for run, intervals in zip(runs, found, strict=True)]
    return Table(f"{form} form: {task}, drop in accuracy (points) when the image is ablated, with 95% intervals "
                 f"(resampling {', '.join(clusters) or 'cluster'}s)",
                 ["Model", "accuracy with the image (%)", *(f"drop: {label}" for _, label in conditions)], rows)


def blur_levels(runs: list[Run], task: str) -> list[str]:
    """The blur conditions the runs report, by increasing strength (``blur_2`` … ``blur_16``)."""
    found = {metric.removeprefix("acc_") for run in runs for metric in run.results.get(task, {})
             if metric.startswith(f"acc_{BLUR}")}
    return sorted(found, key=lambda condition: float(condition.removeprefix(BLUR)))


def figure_a1(runs: list[Run], task: str, out: Path) -> list[Table | Figure | Note]:
    """The heat map of accuracy (%) per model (rows) and blur level (columns, the original image first), and its
    values as a table."""
    levels = blur_levels(runs, task)
    if not levels:
        return [Note(f"{task}: no blurred condition (acc_blur_*): Figure A.1 skipped")]
    columns = ["image", *levels]
    values = [[_float(run.metric(task, f"acc_{c}")) for c in columns] for run in runs]
    labels = ["original", *(f"σ = {c.removeprefix(BLUR)} px" for c in levels)]
    drops = drop_table(runs, task, list(zip(levels, labels[1:], strict=True)), "Figure A.1")
    table = Table(f"Figure A.1 values: {task}, accuracy (%) under progressive Gaussian blur",
                  ["Model", *labels], [cells([run.name, *(number(v) for v in row)]) for run, row in
                                       zip(runs, values, strict=True)])
    figure = new_figure(1.2 * len(columns) + 2.5, 0.5 * len(runs) + 1.6)
    ax = figure.subplots()
    image = ax.imshow(values, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for (row, column), value in ((rc, values[rc[0]][rc[1]]) for rc in
                                 ((r, c) for r in range(len(runs)) for c in range(len(columns)))):
        ax.text(column, row, number(value), ha="center", va="center", fontsize=8,
                color="black" if finite(value) and value > 60 else "white")
    ax.set_xticks(range(len(columns)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(runs)), [run.name for run in runs])
    ax.set_title(f"{task}: accuracy under blur")
    figure.colorbar(image, ax=ax, label="accuracy (%)")
    path = save(figure, out / f"blur_{task}.png")
    caption = (f"Figure A.1 form: {task}, accuracy (%) as the image is blurred (Gaussian, σ in pixels of the image); "
               "accuracy that stays put under strong blur means little use of fine detail. The cells are point "
               "values (no interval is stored for a blurred accuracy); the drops' intervals are in the table above.")
    return [table, drops, Figure(path, caption)]


def _float(value: Any) -> float:
    return float(value) if finite(value) else float("nan")
