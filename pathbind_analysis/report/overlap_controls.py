"""Seed 004's controlled overlap: attention's overlap with the true box tested against a shifted, a random far and a
random-size box, in the default layers and across nine layer groups (the grounding tasks' ``overlap_controls``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pathbind_analysis.report.document import Figure, Note, Section, Table
from pathbind_analysis.report.figures import colour, new_figure, save
from pathbind_analysis.report.fmt import cells, finite, number
from pathbind_analysis.report.grounding import intervals_said, item_interval, logged_records
from pathbind_analysis.report.runs import Run

BOXES = (("true", "true box"), ("shifted", "shifted"), ("far", "random far"), ("random_size", "random size"))
ALPHA = 0.05
NO_INTERVAL = ("the IoU columns are means over the items with no interval: the run's overlap_controls stores 95% "
               "intervals only for the paired changes Δ = true − control (sign-flip test by cluster), shown beside.")


def overlap_controls_section(runs: list[Run], out: Path) -> Section:
    section = Section("Grounding overlap controls (seed 004)",
                      "IoU (%) of each model's top-10% attention mask (seed 004's 90th-percentile threshold) with "
                      "the expert box and with three control boxes of the same item, in the middle-third layers and "
                      "in each ninth of the decoder; Δ = true − control with the 95% interval of the clustered "
                      "sign-flip test (by image), p Holm-adjusted across every layer set and control of the "
                      "model's task. A heat map that points at the evidence beats every control.")
    tasks = sorted({task for run in runs for task, metrics in run.results.items() if "overlap_controls" in metrics})
    if not tasks:
        section.blocks.append(Note("no run has a grounding task with overlap_controls (runs before PathBind "
                                   "reported it, or no grounding task): skipped"))
    for task in tasks:
        ran = [(run, run.metric(task, "overlap_controls")) for run in runs if run.metric(task, "overlap_controls")]
        section.blocks += [_table(ran, task), Note(f"{task}: {NO_INTERVAL}"), *_verdicts(ran, task)]
        section.blocks.append(_sweep_figure(ran, task, out))
    return section


def _table(ran: list[tuple[Run, dict[str, Any]]], task: str) -> Table:
    rows = []
    for run, controls in ran:
        for name, group in _shown(controls).items():
            tests = group["tests"]
            rows.append(cells([run.name, name, _layers(group["layers"]),
                               *(number(group[kind], scale=100) for kind, _ in BOXES),
                               *(_test(tests[kind]) for kind, _ in BOXES[1:])]))
    return Table(f"{task}: controlled overlap (IoU %, q = {ran[0][1]['q']})",
                 ["Model", "layers", "decoder layers", *(label for _, label in BOXES),
                  *(f"Δ vs {label}" for _, label in BOXES[1:])], rows)


def _shown(controls: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The layer sets to show: all of them, or the default one alone for a model without decoder layers (the
    controls), whose map is the same in every set."""
    groups = controls["groups"]
    if any(group["layers"] for group in groups.values()):
        return groups
    return {name: group for name, group in groups.items() if name == "mid"}


def _layers(layers: list[int]) -> str:
    if not layers:
        return "–"
    return str(layers[0]) if len(layers) == 1 else f"{layers[0]}–{layers[-1]}"


def _test(test: dict[str, Any]) -> str:
    interval = test["ci95"]
    if not finite(test["delta"]):
        return "n/a"
    bounds = (f"[{number(interval['low'], scale=100)}, {number(interval['high'], scale=100)}]"
              if finite(interval["low"]) else "[no interval]")
    p = f"p = {test['p_holm']:.2g}" if finite(test.get("p_holm")) else "p n/a"
    return f"{100 * test['delta']:+.1f} {bounds}, {p}"


def _verdicts(ran: list[tuple[Run, dict[str, Any]]], task: str) -> list[Note]:
    notes = []
    for run, controls in ran:
        groups = _shown(controls)
        beaten = [name for name, group in groups.items()
                  if all(test["delta"] > 0 and test.get("p_holm", 1.0) <= ALPHA for test in group["tests"].values())]
        alone = "" if len(groups) > 1 else " (no decoder layers: one map for every layer set)"
        which = f" ({', '.join(beaten)})" if beaten else ""
        notes.append(Note(f"{run.name} on {task}: the true box beats all three controls (Holm p ≤ {ALPHA}) in "
                          f"{len(beaten)} of {len(groups)} layer sets{alone}{which}; p adjusted across "
                          f"{controls['holm_family']}."))
    return notes


def _sweep_figure(ran: list[tuple[Run, dict[str, Any]]], task: str, out: Path) -> Figure | Note:
    ran = [(run, controls) for run, controls in ran if len(_shown(controls)) > 1]
    if not ran:
        return Note(f"{task}: no model with decoder layers: the layer-group figure is skipped")
    figure = new_figure(3.4 * len(ran), 3.2)
    logged = {run.name: logged_records(run, task) for run, _ in ran}
    for ax, (run, controls) in zip(figure.subplots(1, len(ran), squeeze=False)[0], ran, strict=True):
        ninths = [name for name in controls["groups"] if name.startswith("ninth_")]
        if records := logged[run.name]:
            bands = [item_interval(records, [r.get("overlap_controls", {}).get(name, {}).get("true", math.nan)
                                             for r in records]) for name in ninths]
            ax.fill_between(range(1, len(ninths) + 1), *zip(*bands, strict=True), color=colour(0), alpha=0.2,
                            linewidth=0)
        for i, (kind, label) in enumerate(BOXES):
            values = [100 * controls["groups"][name][kind] if finite(controls["groups"][name][kind]) else float("nan")
                      for name in ninths]
            ax.plot(range(1, len(ninths) + 1), values, marker="o", color=colour(i), label=label,
                    linestyle="-" if kind == "true" else "--")
        ax.set(title=run.name, xlabel="decoder ninth (1: shallowest)", ylabel="IoU (%)")
    figure.axes[0].legend(fontsize=7)
    figure.suptitle(f"{task}: overlap with the true and the control boxes across the layer groups")
    return Figure(save(figure, out / f"overlap_controls_{task}.png"),
                  f"{task}: IoU of the top-10% attention mask with the true box (solid) and each control box "
                  "(dashed) in each ninth of the decoder; a model whose true line is not above the others does not "
                  "point at the evidence in those layers. " + intervals_said(logged, "Band (true box)")
                  + " The controls' lines are point values; the table gives each change true − control its "
                  "interval.")
