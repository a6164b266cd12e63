"""The lmms-eval CLI's console table in runs with ``results["pathbind"]``: scalar metrics only, a task that evaluated
too few of its rows flagged beside its name, no Stderr column of "N/A" alone, one line naming the structured ones
and where to read them, and, when PathBind tasks ran without ``--log_samples``, a last line saying what needs it."""

from __future__ import annotations

import math
import sys
from typing import Any

from pathbind.lmms.marks import marked, patch
from pathbind.summary import coverage_flag


def install_table_hook() -> bool:
    """Make the lmms-eval CLI's results table show only scalar metrics in runs with ``results["pathbind"]``, with
    one line naming the structured ones left out; idempotent. The CLI saves results.json before it prints."""
    main = sys.modules.get("lmms_eval.__main__")
    original = getattr(main, "make_table", None)
    if original is None or marked(original):
        return original is not None
    main.make_table = patch(original, _scalars_only, _pathbind_results)  # type: ignore[union-attr]  # a global
    return True


def _pathbind_results(result_dict: Any = None, *args: Any, **kwargs: Any) -> bool:
    """Results of a run with a PathBind task or model: PathBind's ``evaluate`` gave them ``results["pathbind"]``."""
    return isinstance(result_dict, dict) and "pathbind" in result_dict


def _scalars_only(original: Any, result_dict: dict, column: str = "results", sort_results: bool = False) -> str:
    shown, left_out = scalar_view(result_dict, column)
    table = without_empty_stderr(original(shown, column, sort_results))
    table, paired = paired_rows_only(table, shown.get(column) or {}, result_dict.get(column) or {})
    notes = [structured_note(left_out, result_dict)] if left_out else []
    notes += [PAIRED_NOTE] if paired else []
    if column == ("groups" if "groups" in result_dict else "results"):  # the CLI prints this table last
        notes += sample_log_hint(result_dict)
    return "\n".join([table, *notes, ""]) if notes else table


def scalar_view(result_dict: dict, column: str = "results") -> tuple[dict, list[str]]:
    """A copy of ``result_dict`` whose ``column`` keeps only scalar metric values, and the metric names left out;
    ``result_dict`` itself is not changed."""
    left_out: set[str] = set()
    table: dict[str, dict] = {}
    for task, metrics in (result_dict.get(column) or {}).items():
        table[task] = {}
        for key, value in metrics.items():
            if value is None or isinstance(value, (str, int, float)):
                table[task][key] = value
            else:
                left_out.add(key.partition(",")[0])
        if flag := coverage_flag(metrics.get("accounting,none")):  # lmms-eval prints the alias as the task's name
            table[task]["alias"] = f"{metrics.get('alias', task)} [{flag}]"
    return {**result_dict, column: table}, sorted(left_out)


PAIRED_COLUMNS = ("Baseline", "Diff", "CI", "P_Value")
PAIRED_METRIC = "acc_image"  # lmms-eval pairs the per-answer score, which PathBind's records give with the image
PAIRED_NOTE = (f"--baseline: on {PAIRED_METRIC}, Baseline/Diff/CI/P_Value are lmms-eval's paired t-test over the "
               "answers with the image (rows taken as independent); on the Δ rows, PathBind's paired change: CI its "
               "95% interval resampling the task's clusters (images by default), P_Value Holm-adjusted (clustered "
               "sign-flip test); the other rows carry no paired figure")


def paired_rows_only(table: str, shown: dict, results: dict) -> tuple[str, bool]:
    """The console ``table`` with lmms-eval's paired figure (one per task, which it repeats on every metric row)
    only on the row it belongs to (``PAIRED_METRIC``), PathBind's clustered figure on its Δ rows (each task's
    ``baseline`` record), and nothing on the others; and whether a task had a baseline."""
    lines = table.split("\n")
    header = [cell.strip() for cell in lines[0].split("|")]
    if not all(name in header for name in (*PAIRED_COLUMNS, "Metric", "Tasks")):
        return table, False
    tasks = {str(metrics.get("alias", task)).strip(): task for task, metrics in shown.items()}
    at = {name: header.index(name) for name in (*PAIRED_COLUMNS, "Metric", "Tasks")}
    changed = False
    for n, line in enumerate(lines[2:], start=2):
        cells = line.split("|")
        if len(cells) != len(header):
            break  # the end of the first table
        record = (results.get(tasks.get(cells[at["Tasks"]].strip(), "")) or {}).get("baseline,none")
        if not isinstance(record, dict):
            continue
        metric = cells[at["Metric"]].strip()
        pair = next((row for row in record.get("pairs", []) if row.get("metric") == metric), None)
        if metric != PAIRED_METRIC:
            figures = _clustered(pair) if pair else ("", "", "")
            for name, text in zip(PAIRED_COLUMNS[1:], figures, strict=True):
                cells[at[name]] = f" {text} ".ljust(len(cells[at[name]]))
            if not pair:
                cells[at["Baseline"]] = " ".ljust(len(cells[at["Baseline"]]))
        lines[n], changed = "|".join(cells), True
    return "\n".join(lines), changed


def _clustered(pair: dict) -> tuple[str, str, str]:
    """Diff, CI and P_Value of a Δ row: PathBind's change, its clustered 95% interval and Holm-adjusted p."""
    interval, p = pair.get("ci95") or {}, pair.get("p_holm", math.nan)
    low, high = interval.get("low"), interval.get("high")
    ci = f"[{low:+.3g}, {high:+.3g}]" if _finite(low) and _finite(high) else "no interval"
    shown_p = f"{p:.4f}{'*' if float(p) < 0.05 else ''} (Holm)" if _finite(p) else "n/a"
    return (f"{pair['delta']:+.3g}" if _finite(pair.get("delta")) else "n/a"), ci, shown_p


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def without_empty_stderr(table: str) -> str:
    """The markdown ``table`` without its "±" and "Stderr" columns when no row has a standard error (PathBind's
    metrics carry theirs in ``ci95``, and lmms-eval writes "N/A" where a metric has none)."""
    rows = [line.split("|") for line in table.split("\n")]
    header = [cell.strip() for cell in rows[0]]
    if "Stderr" not in header or header[header.index("Stderr") - 1] != "":
        return table
    column = header.index("Stderr")
    body = [row for row in rows[2:] if len(row) > 1]
    if any(len(row) != len(header) or row[column].strip() != "N/A" for row in body):
        return table
    return "\n".join("|".join(row[:column - 1] + row[column + 1:]) if len(row) > 1 else row[0] for row in rows)


def structured_note(names: list[str], result_dict: dict) -> str:
    """The line under the table naming the structured metrics and where to read them."""
    output = ((result_dict.get("config") or {}).get("resolved_cli_args") or {}).get("output_path")
    where = (f"are in results.json; `pathbind summary {output}` shows them" if output else
             "are not in this table; run with --output_path to save them to results.json for `pathbind summary`")
    return f"structured metrics ({', '.join(names)}) {where}"


def sample_log_hint(result_dict: dict) -> list[str]:
    """The run's last line when PathBind tasks ran without ``--log_samples``: what needs the logs it did not keep."""
    arguments = (result_dict.get("config") or {}).get("resolved_cli_args") or {}
    if arguments.get("log_samples", True) or not (result_dict.get("pathbind") or {}).get("data"):
        return []
    return ["pathbind: no sample logs were kept (no --log_samples): `pathbind pairs`, --baseline and the overlays "
            "and pairs of `pathbind report` read them; add --log_samples to the run to keep each answer"]
