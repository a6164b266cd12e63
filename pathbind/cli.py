"""The ``pathbind`` command line: inspect installed plugins; plugins add their own commands."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from pathbind.catalog import plugin_tasks
from pathbind.data import DataLocationError
from pathbind.lmms.watch import when_defined
from pathbind.plugins import PluginManager, make_plugin_manager
from pathbind.strict_json import dumps_strict
from pathbind.text_table import format_table

if TYPE_CHECKING:
    from pathbind.lmms_output import ResultFile


OK, FAILURE = 0, 1  # every subcommand's exit codes; argparse exits 2 on a bad command line (a usage error)


INTERVAL_NOTE = ("[low, high]: the 95% interval, resampling the task's clusters (images unless the task names "
                 "another); ! marks one on few clusters or with one dominant cluster (its warning: --json, or the "
                 "results.json)")


class CommandError(Exception):
    """An expected user error (a missing file, a bad path): one line on stderr and exit FAILURE."""


def cmd_tasks(args: argparse.Namespace, pm: PluginManager) -> int:
    entries = [e for e in plugin_tasks(pm) if args.all or e.kind in ("task", "group")]
    rows = [{"name": e.name, "kind": e.kind, "plugin": e.plugin, "family": e.family,
             "data": e.data.describe() if e.data else e.error or e.data_problem or "-"} for e in entries]
    _print(rows, ["name", "kind", "plugin", "family", "data"], args.json)
    return _plugin_status("tasks", pm)


def cmd_models(args: argparse.Namespace, pm: PluginManager) -> int:
    rows = [{"name": c.name, "plugin": c.plugin, "class": c.value.simple_class_path or c.value.chat_class_path,
             "aliases": ",".join(c.value.aliases), "description": c.value.description}
            for c in sorted(pm.models().values(), key=lambda c: c.name)]
    _print(rows, ["name", "plugin", "class", "description"], args.json)
    return _plugin_status("models", pm)


def cmd_doctor(args: argparse.Namespace, pm: PluginManager) -> int:
    from pathbind.doctor import report_lines, run_checks

    checks = run_checks(pm, check_data=not args.no_data)
    print(dumps_strict([c.__dict__ for c in checks], indent=2) if args.json else "\n".join(report_lines(checks)))
    return FAILURE if any(c.status == "FAIL" for c in checks) else OK


def cmd_data_check(args: argparse.Namespace, pm: PluginManager) -> int:
    from pathbind.data_check import check, source_tasks, unused_folders

    sources = source_tasks(pm)
    reports = check(sources, args.dir, args.source)
    failed = [r for r in reports if r.problems()]
    if args.json:
        print(dumps_strict([r.as_dict() for r in reports], indent=2))
        return FAILURE if failed else OK
    for report in reports:
        print(f"{report.source}: {report.folder}")
        print("\n".join(f"  [{'FAIL' if line.problem else '  OK'}] {line.text}" for line in report.lines()))
        print(f"{'FAIL' if report.problems() else 'OK'} {report.source}: {report.summary()}")
    unused = unused_folders(sources, args.dir) if args.source is None else []
    if unused:
        print(f"not checked, named after no data source or task (no task reads them): {', '.join(unused)}")
    problems = sum(len(r.problems()) for r in failed)
    print(f"FAIL: {problems} problem(s) in {len(failed)} of {len(reports)} data folder(s)" if failed else
          f"OK: {len(reports)} data folder(s) checked, no problems")
    return FAILURE if failed else OK


def cmd_summary(args: argparse.Namespace, pm: PluginManager) -> int:
    from pathbind.summary import (
        accounting_rows,
        dimension_rows,
        summary_rows,
        unaccounted_tasks,
        unshown,
        with_intervals,
    )

    results = _usable_results(args.paths)
    if not results:
        return FAILURE
    rows = [row for result in results for row in summary_rows(result, accounting=args.json)]
    problems = [line for result in results for line in unshown(result)]
    if not rows:  # a results file without one scalar metric: nothing was measured
        print(f"pathbind summary: error: no metric in {', '.join(str(r.path) for r in results)} (every task's "
              "results are empty or not numbers: check the run's log)" + "".join(f"; {p}" for p in problems),
              file=sys.stderr)
        return FAILURE
    for problem in problems:  # beside the table, on stderr: what it cannot show
        print(f"pathbind summary: warning: {problem}", file=sys.stderr)
    if args.json:  # each task's accounting as results.json has it; undefined figures as null
        print(dumps_strict(rows, indent=2))
        return OK
    tables: dict[tuple[str, ...], list[dict]] = {}  # tasks reporting the same metrics share a table
    for row in map(with_intervals, rows):
        tables.setdefault(tuple(row), []).append(row)
    dimensions = [with_intervals(row) for result in results for row in dimension_rows(result)]
    accounted = [row for result in results for row in accounting_rows(result)]
    print("\n\n".join(format_table(table) for table in [*tables.values(), dimensions, accounted] if table))
    if any("intervals" in row for row in rows):
        print(f"\n{INTERVAL_NOTE}")
    missing = sorted({task for result in results for task in unaccounted_tasks(result)})
    if missing:
        print(f"\nno row accounting (not a PathBind task, or an older run): {', '.join(missing)}")
    print(f"\nfrom {len(results)} result file(s): " + ", ".join(str(r.path) for r in results))
    return OK


def _usable_results(paths: list[Path]) -> list[ResultFile]:
    """Each results file below ``paths`` that lmms-eval wrote; every other one named in a warning."""
    from pathbind.lmms_output import ResultsError, find_results, load_results

    results, skipped = [], 0
    for path in paths:
        if not path.exists():
            print(f"pathbind summary: warning: {path}: no such file or folder", file=sys.stderr)
            skipped += 1
        for file in find_results([path]) if path.exists() else []:
            try:
                results.append(load_results(file))
            except ResultsError as exc:
                print(f"pathbind summary: warning: {exc}; skipped", file=sys.stderr)
                skipped += 1
    if not results:
        what = "no usable lmms-eval results file" if skipped else "no lmms-eval results.json"
        print(f"pathbind summary: error: {what} under {', '.join(map(str, paths))} "
              "(lmms-eval exits 0 even when a run fails: check its log)", file=sys.stderr)
    return results


def _plugin_status(command: str, pm: PluginManager) -> int:
    """FAILURE, with a pointer to the doctor, when a plugin failed and its contributions are missing above."""
    if not pm.failures:
        return OK
    print(f"pathbind {command}: error: plugin(s) {', '.join(sorted(pm.failures))} failed and are left out "
          "(see the warnings above, or run `pathbind doctor`)", file=sys.stderr)
    return FAILURE


def build_parser(pm: PluginManager) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pathbind", description=__doc__)
    parser.add_argument("--version", action="version", version=versions(),
                        help="print PathBind's version and the lmms-eval it runs with, and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    tasks = sub.add_parser("tasks", help="list every task and group of every installed PathBind plugin")
    tasks.add_argument("--all", action="store_true", help="also list shared include files and broken YAMLs")
    tasks.set_defaults(func=lambda a: cmd_tasks(a, pm))
    models = sub.add_parser("models", help="list the lmms-eval models PathBind plugins provide")
    models.set_defaults(func=lambda a: cmd_models(a, pm))
    doctor = sub.add_parser("doctor", help="check lmms-eval, torch, plugins, task indexing and data")
    doctor.add_argument("--no-data", action="store_true", help="skip the data reachability checks")
    doctor.set_defaults(func=lambda a: cmd_doctor(a, pm))
    data = sub.add_parser("data", help="check data folders against their sources' published layouts")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="COMMAND")
    data_check = data_sub.add_parser(
        "check", help="read a data folder as a run would, before the run: files, rows kept and dropped, bad images",
        description="Read DIR as the tasks of SOURCE would read $PATHBIND_DATA/SOURCE/ (without SOURCE: DIR is a "
                    "PATHBIND_DATA root and each folder in it named after a source is checked). Exits 1 when a "
                    "task would fail, drop a row other than by its definition, or score an item invalid.")
    data_check.add_argument("source", nargs="?", metavar="SOURCE", help="a data name (metadata.pathbind_data)")
    data_check.add_argument("dir", type=Path, metavar="DIR", help="the source's folder, or a PATHBIND_DATA root")
    data_check.set_defaults(func=lambda a: cmd_data_check(a, pm))
    summary = sub.add_parser("summary", help="table of the metrics in lmms-eval result files or folders")
    summary.add_argument("paths", nargs="+", type=Path, help="results.json files or --output_path folders")
    summary.set_defaults(func=lambda a: cmd_summary(a, pm))
    for command in (tasks, models, doctor, data_check, summary):
        command.add_argument("--json", action="store_true", help="machine-readable output")
    pm.add_commands(sub)
    return parser


def versions() -> str:
    """``pathbind 0.1.0 (lmms-eval 0.7.3)``: what a bug report names."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        lmms_eval = f"lmms-eval {version('lmms-eval')}"
    except PackageNotFoundError:
        lmms_eval = "lmms-eval not installed"
    return f"pathbind {version('pathbind')} ({lmms_eval})"


def main(argv: Sequence[str] | None = None) -> int:
    pm = make_plugin_manager()
    args = build_parser(pm).parse_args(argv)
    try:
        return int(args.func(args) or OK)
    except (CommandError, DataLocationError) as exc:
        return _error(args.command, str(exc))
    except OSError as exc:  # a missing file, an unwritable folder: the user's paths, not a PathBind bug
        return _error(args.command, f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))


def console() -> None:
    """The ``pathbind`` command. Log lines are bare and from WARNING up (lmms-eval's task indexing logs each base
    YAML at DEBUG); ``LOGURU_LEVEL`` keeps loguru's own format at the level it names."""
    if "LOGURU_LEVEL" not in os.environ:
        _bare_warnings()
        # Importing lmms-eval's judge launcher (task utilities do) points loguru at stdout, into --json output.
        when_defined("lmms_eval.llm_judge.launcher", "AVAILABLE_LAUNCHERS", _bare_warnings)
    sys.exit(main())


def _bare_warnings() -> None:
    logger.remove()
    logger.add(sys.stderr, level="WARNING", format="{message}")


def _error(command: str, message: str) -> int:
    print(f"pathbind {command}: error: {message}", file=sys.stderr)
    return FAILURE


def _print(rows: list[dict], columns: list[str], as_json: bool) -> None:
    print(dumps_strict(rows, indent=2) if as_json else format_table(rows, columns))


if __name__ == "__main__":
    console()
