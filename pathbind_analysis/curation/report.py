"""Markdown tables in the PathBind paper's forms: filtering (Tables B.5, B.6; Appendix B.2) and reviewer agreement
(Table B.8)."""

from __future__ import annotations

from typing import Any

from pathbind_analysis.curation.specificity import TOTAL
from pathbind_analysis.curation.text_filter import AVERAGE

STAGE_TITLES = {"stage1": "Stage 1", "stage2": "Stage 2 (items left after stage 1)"}


def filter_markdown(report: dict[str, Any]) -> str:
    """The filter report: item flow, per-model accuracy (Table B.5) and the correct-count distribution (B.6)."""
    counts, stages = report["counts"], report["stages"]
    answers = "text-only" if report["condition"] == "text" else f"'{report['condition']}'-condition"
    lines = [f"# Consensus filter on {answers} answers", "",
             f"Condition `{report['condition']}`. Items: **{report['flow']}** (all → after stage 1 → kept).", ""]
    for name, dropped in (("stage1", counts["dropped_stage1"]), ("stage2", counts["dropped_stage2"])):
        models = stages[name]["models"]
        lines.append(f"- {name.replace('stage', 'Stage ')} ({', '.join(models)}): dropped {dropped:,} items that "
                     f"≥ {stages[name]['drop_if_correct_by_at_least']} of {len(models)} models answer correctly.")
    excluded = counts["excluded_stage1"] + counts["excluded_stage2"]
    lines.append(f"- Excluded for missing answers: {excluded:,}" +
                 (" (ids and reasons in `filter_report.json` and `item_decisions.csv`)." if excluded else "."))
    skipped = sum(len(model["skipped_files"]) for model in report["models"])
    if skipped:
        lines.append(f"- Skipped log files found in folders: {skipped} (no answers in this condition, or not a "
                     "PathBind task's log; listed under `models` in `filter_report.json`).")
    if report["ignored"]["count"]:
        lines.append(f"- Ignored: {report['ignored']['count']:,} items answered in a stage-2 log but held by no "
                     "stage-1 log.")
    sources = list(report["counts_by_source"])
    lines += ["", f"## Accuracy (%) of the {answers} answers (Table B.5 form)", "", _header("Model", sources)]
    for stage, table in report["accuracy"].items():
        lines.append(_section(STAGE_TITLES[stage], sources))
        lines += [_line(model, [row.get(s) for s in sources] + [row[AVERAGE]]) for model, row in table.items()]
    lines += ["", "## Items by number of models answering correctly (% of each source's items) (Table B.6 form)", "",
              _header("Models correct", sources)]
    for stage, table in report["distribution"].items():
        lines.append(_section(STAGE_TITLES[stage], sources))
        columns = [table["by_source"].get(s) for s in sources]
        for j in range(table["n_models"] + 1):
            cells = [column["percent"][j] if column else None for column in columns]
            lines.append(_line(f"{j}/{table['n_models']} correct", [*cells, table[AVERAGE][j]]))
        lines.append(_line("Items", [column["items"] if column else 0 for column in columns] + [None]))
    lines += ["", f"{AVERAGE} is the unweighted mean over sources, as in the paper; a source with no items at a "
              "stage shows '-'. Accuracy is over the items each stage judged.", ""]
    return "\n".join(lines)


def specificity_markdown(report: dict[str, Any]) -> str:
    """The specificity filter report: the flow per split (Appendix B.2's counts) and each judge's answers."""
    names = [judge["name"] for judge in report["judges"]]
    total = report["flow"][TOTAL]
    lines = ["# Specificity filter on PathVG expressions", "",
             f"Kept when every judge ({', '.join(names)}) answers Specific: **{total['kept']:,} of "
             f"{total['candidates']:,}** expressions ({_cell(total['retention_percent'])}%).", "",
             "| Split | Candidates | " + " | ".join(f"Specific ({name})" for name in names)
             + " | Kept (all Specific) | Vague | Excluded (no valid answer) | Retention (%) |",
             "|---|" + "---:|" * (len(names) + 5)]
    for split, flow in report["flow"].items():
        values = [flow["candidates"], *flow["specific_by"].values(), flow["kept"], flow["vague"], flow["excluded"],
                  flow["retention_percent"]]
        lines.append(_line(f"**{split}**" if split == TOTAL else split, values))
    lines += ["", "| Judge | Answers | Specific | Vague | Invalid | Missing |", "|---|" + "---:|" * 5]
    lines += [_line(j["name"], [j["answers"], j["Specific"], j["Vague"], sum(j["invalid"].values()), j["missing"]])
              for j in report["judges"]]
    lines.append("")
    for judge in report["judges"]:
        if judge["invalid"]:
            reasons = "; ".join(f"{reason}: {n:,}" for reason, n in judge["invalid"].items())
            lines.append(f"- Invalid answers of {judge['name']}: {reasons}.")
    if report["excluded"]:
        lines.append(f"- Excluded: {len(report['excluded']):,} items a judge did not answer validly (ids and "
                     "reasons in `filter_report.json` and `item_decisions.csv`).")
    if report["not_in_any_log"]:
        missing = ", ".join(f"{split} {n:,}" for split, n in report["not_in_any_log"].items())
        lines.append(f"- Rows of the data in no judge's log (run without --limit to judge them): {missing}.")
    if report["data_items_unknown"]:
        lines.append(f"- Rows of the data in no judge's log: unknown for {', '.join(report['data_items_unknown'])} "
                     "(no results.json of the run beside its logs; pass the run folders, not copies of the logs).")
    skipped = sum(len(judge["skipped_files"]) for judge in report["judges"])
    if skipped:
        lines.append(f"- Skipped log files found in folders: {skipped} (not a specificity log; listed under "
                     "`judges` in `filter_report.json`).")
    lines += [f"- Rule: {report['rule']}.", ""]
    return "\n".join(lines)


def agreement_markdown(row: dict[str, Any]) -> str:
    """One Table B.8 row with its header, and what R1 and R2 are."""
    kappa = "n/a" if row["kappa"] is None else f"{row['kappa']:.3f}"
    lines = ["| Component | Reviewed | Both retain | Both exclude | R1 retain/R2 exclude | R1 exclude/R2 retain "
             "| Agreement (%) | Cohen's κ |", "|---|" + "---:|" * 7,
             f"| {row['component']} | {row['reviewed']:,} | {row['both_retain']:,} | {row['both_exclude']:,} "
             f"| {row['r1_retain_r2_exclude']:,} | {row['r1_exclude_r2_retain']:,} "
             f"| {row['agreement_percent']:.2f} | {kappa} |", "", f"R1: {row['r1']}; R2: {row['r2']}."]
    if row["kappa_note"]:
        lines.append(f"Cohen's κ: {row['kappa_note']}.")
    return "\n".join(lines)


def _header(first: str, sources: list[str]) -> str:
    return f"| {first} | {' | '.join(sources)} | {AVERAGE} |\n|---|" + "---:|" * (len(sources) + 1)


def _section(title: str, sources: list[str]) -> str:
    return f"| **{title}** |" + " |" * (len(sources) + 1)


def _line(label: str, values: list[float | int | None]) -> str:
    return f"| {label} | {' | '.join(map(_cell, values))} |"


def _cell(value: float | int | None) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:.1f}"
