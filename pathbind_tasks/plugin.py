"""Registers PathBind's benchmarks, prompt templates and task commands with the plugin system."""

from __future__ import annotations

import argparse
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
    from pathbind_tasks.demo.command import add_demo_data_command

    add_demo_data_command(subparsers)
