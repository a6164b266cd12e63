"""The lmms-eval CLI's console table in runs with ``results["pathbind"]``: scalar metrics only, a task that evaluated
too few of its rows flagged beside its name, no Stderr column of "N/A" alone, one line naming the structured ones
and where to read them, and, when PathBind tasks ran without ``--log_samples``, a last line saying what needs it."""

from __future__ import annotations

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
    notes = [structured_note(left_out, result_dict)] if left_out else []
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
