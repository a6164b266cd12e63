"""The ``pathbind`` command line: inspect installed plugins; plugins add their own commands."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pathbind.catalog import plugin_tasks
from pathbind.plugins import PluginManager, make_plugin_manager
from pathbind.table import format_table


def cmd_tasks(args: argparse.Namespace, pm: PluginManager) -> int:
    entries = [e for e in plugin_tasks(pm) if args.all or e.kind in ("task", "group")]
    rows = [{"name": e.name, "kind": e.kind, "plugin": e.plugin, "family": e.family,
             "data": e.data.describe() if e.data else e.error or e.data_problem or "-"} for e in entries]
    _print(rows, ["name", "kind", "plugin", "family", "data"], args.json)
    return 0


def cmd_models(args: argparse.Namespace, pm: PluginManager) -> int:
    rows = [{"name": c.name, "plugin": c.plugin, "class": c.value.simple_class_path or c.value.chat_class_path,
             "aliases": ",".join(c.value.aliases), "description": c.value.description}
            for c in sorted(pm.models().values(), key=lambda c: c.name)]
    _print(rows, ["name", "plugin", "class", "description"], args.json)
    return 0


def cmd_doctor(args: argparse.Namespace, pm: PluginManager) -> int:
    from pathbind.doctor import run_checks

    checks = run_checks(pm, check_data=not args.no_data)
    if args.json:
        print(json.dumps([c.__dict__ for c in checks], indent=2))
    else:
        for check in checks:
            print(f"[{check.status:>4}] {check.name}: {check.detail}")
    return int(any(c.status == "FAIL" for c in checks))


def cmd_summary(args: argparse.Namespace, pm: PluginManager) -> int:
    from pathbind.summary import dimension_rows, find_results, summary_rows

    files = find_results(args.paths)
    if not files:
        print(f"pathbind summary: no lmms-eval results.json under {', '.join(map(str, args.paths))} "
              "(lmms-eval exits 0 even when a run fails: check its log)", file=sys.stderr)
        return 1
    rows = [row for file in files for row in summary_rows(file)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    tables: dict[tuple[str, ...], list[dict]] = {}  # tasks reporting the same metrics share a table
    for row in rows:
        tables.setdefault(tuple(row), []).append(row)
    dimensions = [row for file in files for row in dimension_rows(file)]
    print("\n\n".join(format_table(table) for table in [*tables.values(), dimensions] if table))
    print(f"\nfrom {len(files)} result file(s): " + ", ".join(map(str, files)))
    return 0


def build_parser(pm: PluginManager) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pathbind", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    tasks = sub.add_parser("tasks", help="list every task and group of every installed PathBind plugin")
    tasks.add_argument("--all", action="store_true", help="also list shared include files and broken YAMLs")
    tasks.set_defaults(func=lambda a: cmd_tasks(a, pm))
    models = sub.add_parser("models", help="list the lmms-eval models PathBind plugins provide")
    models.set_defaults(func=lambda a: cmd_models(a, pm))
    doctor = sub.add_parser("doctor", help="check lmms-eval, torch, plugins, task indexing and data")
    doctor.add_argument("--no-data", action="store_true", help="skip the data reachability checks")
    doctor.set_defaults(func=lambda a: cmd_doctor(a, pm))
    summary = sub.add_parser("summary", help="table of the metrics in lmms-eval result files or folders")
    summary.add_argument("paths", nargs="+", type=Path, help="results.json files or --output_path folders")
    summary.set_defaults(func=lambda a: cmd_summary(a, pm))
    for command in (tasks, models, doctor, summary):
        command.add_argument("--json", action="store_true", help="machine-readable output")
    list(pm.call_each("pathbind_add_commands", subparsers=sub))  # plugins add parsers as a side effect
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    pm = make_plugin_manager()
    args = build_parser(pm).parse_args(argv)
    return int(args.func(args) or 0)


def _print(rows: list[dict], columns: list[str], as_json: bool) -> None:
    print(json.dumps(rows, indent=2) if as_json else format_table(rows, columns))


if __name__ == "__main__":
    sys.exit(main())
