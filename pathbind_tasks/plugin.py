"""Registers PathBind's benchmarks, the PathView demo's task variants, prompt templates, VQA aggregations, demo
data functions and the demo-data command with the plugin system."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from pathbind import TaskVariants, hookimpl

HERE = Path(__file__).parent


def benchmark_dirs() -> list[Path]:
    """The folders that define tasks: those holding a YAML file that is not an ``_``-prefixed base to include."""
    return sorted(d for d in HERE.iterdir() if d.is_dir() and any(not p.name.startswith("_") for p in d.glob("*.yaml")))


@hookimpl
def pathbind_task_dirs() -> list[Path]:
    return benchmark_dirs()


@hookimpl
def pathbind_task_variants() -> list[TaskVariants]:
    # The PathView demo: every PathView-Bench task on the packaged synthetic release (demo/pathview_synth.py), also
    # under the names it had before PathBind prefixed its benchmarks' task names (aliases/ holds the others).
    demo = HERE / "demo" / "data" / "pathview"
    return [TaskVariants(source=HERE / "pathview", rename=("pathbind_pathview_", prefix), data_dir=demo)
            for prefix in ("pathbind_pathview_demo_", "pathview_demo_")]


@hookimpl
def pathbind_template_dirs() -> list[Path]:
    return [HERE / "templates"]


@hookimpl
def pathbind_demo_data() -> dict[str, Callable[..., object]]:
    from pathbind_tasks.common.faithfulness import question  # lazily: the generators load datasets, scipy and PIL
    from pathbind_tasks.demo.grounding_synth import grounding_expression, grounding_items
    from pathbind_tasks.demo.synth import demo_items

    return {"demo_items": demo_items, "grounding_items": grounding_items,
            "grounding_expression": grounding_expression, "presence_question": question}


@hookimpl
def pathbind_metrics() -> dict[str, Callable[..., object]]:
    # The VQA aggregations, whose record shape third-party tasks can produce; imported when asked for (scipy).
    from pathbind_tasks.common.metrics import VQA, declared

    return {metric.name: metric.aggregate for metric in declared(*VQA)}


@hookimpl
def pathbind_add_commands(subparsers: argparse._SubParsersAction) -> None:
    from pathbind_tasks.demo.command import add_demo_data_command

    add_demo_data_command(subparsers)
