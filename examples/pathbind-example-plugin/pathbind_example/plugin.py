"""The plugin module named by the ``pathbind`` entry point: one function per hook it implements."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pathbind
from pathbind_example import scoring

HERE = Path(__file__).parent


@pathbind.hookimpl
def pathbind_task_dirs() -> list[Path]:
    return [HERE / "tasks"]


@pathbind.hookimpl
def pathbind_template_dirs() -> list[Path]:
    return [HERE / "templates"]


@pathbind.hookimpl
def pathbind_metrics() -> dict[str, Callable[..., object]]:
    return {"example_stain_accuracy": scoring.stain_accuracy}
