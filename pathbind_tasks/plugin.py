"""Registers PathBind's benchmarks, prompt templates, commands and task-side metrics with the plugin system."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from pathbind import hookimpl

HERE = Path(__file__).parent


@hookimpl
def pathbind_task_dirs() -> list[Path]:
    return [HERE]  # one folder per benchmark below it; common/ holds the YAML files they include


@hookimpl
def pathbind_template_dirs() -> list[Path]:
    return [HERE / "templates"]


@hookimpl
def pathbind_add_commands(subparsers: argparse._SubParsersAction) -> None:
    from pathbind_tasks.audit.command import add_audit_command
    from pathbind_tasks.curation.command import add_curation_commands
    from pathbind_tasks.demo.command import add_demo_data_command
    from pathbind_tasks.pairs import add_pairs_command
    from pathbind_tasks.report.command import add_report_command

    add_demo_data_command(subparsers)
    add_curation_commands(subparsers)
    add_audit_command(subparsers)
    add_pairs_command(subparsers)
    add_report_command(subparsers)


@hookimpl
def pathbind_metrics() -> dict[str, Callable[..., object]]:
    from pathbind_tasks.audit.in_run import leakage_split  # reads the training inventory: not a pure metric

    return {"leakage_split": leakage_split}
