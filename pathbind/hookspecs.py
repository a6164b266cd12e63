"""Hook specifications: what a PathBind plugin can contribute, and the markers plugins use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

hookspec = pluggy.HookspecMarker("pathbind")
hookimpl = pluggy.HookimplMarker("pathbind")


@dataclass(frozen=True)
class ModelSpec:
    """An lmms-eval model contributed by a plugin (mirrors lmms-eval's ``ModelManifest``)."""

    model_id: str
    simple_class_path: str | None = None
    chat_class_path: str | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class TaskVariants:
    """Every task defined below ``source`` (a task folder), again under another name and on other data.

    A variant's name is its source task's with the prefix ``rename[0]`` replaced by ``rename[1]``; it reads each
    data file its source names relative to the source YAML's folder from the same relative path in ``data_dir``,
    and drops the source's ``pathbind_data`` and ``requires_pathbind_data`` metadata: ``PATHBIND_DATA`` never
    sends it to its source's data. Everything else is the source's config (:mod:`pathbind.variants`).
    """

    source: Path
    rename: tuple[str, str]
    data_dir: Path


@hookspec
def pathbind_task_dirs() -> list[Path]:
    """Return directories of lmms-eval YAML task specs.

    Every ``*.yaml`` below each directory is indexed by lmms-eval's TaskManager, after the
    built-in tasks and before ``--include_path``. Prefix task names with your plugin's name:
    lmms-eval resolves clashes silently in favour of the first definition, PathBind reports them.
    Entries must be absolute paths of existing folders; a result that is not a list, and each other entry,
    is skipped and reported (as for every hook: a result of the wrong form never reaches lmms-eval).
    """


@hookspec
def pathbind_task_variants() -> list[TaskVariants]:
    """Return :class:`pathbind.TaskVariants`: tasks derived from other tasks, without a YAML file each.

    lmms-eval indexes each variant as a task at its source's YAML (after its plugin's task folders); its config is
    derived from the source's when lmms-eval (or PathBind's catalog) reads it. Names clash as task names do. A
    TaskVariants needs absolute paths of existing folders and two different prefixes; a source task whose name
    lacks ``rename[0]`` gets no variant, and ``pathbind doctor`` fails on it. Anything else is skipped and reported.
    """


@hookspec
def pathbind_template_dirs() -> list[Path]:
    """Return directories of Jinja prompt templates (``<name>.jinja``).

    Templates are looked up by name through :func:`pathbind.render_template`. When two plugins
    ship the same name, the first in hook-call order wins (mark your hookimpl ``tryfirst=True``
    to override a first-party template) and the shadowing is reported. Entries as for ``pathbind_task_dirs``.
    """


@hookspec
def pathbind_models() -> list[ModelSpec]:
    """Return :class:`pathbind.ModelSpec` objects: lmms-eval model ids and their classes.

    Class paths are imported only when lmms-eval instantiates the model, so returning specs
    must not import torch or lmms-eval. Anything but a ModelSpec with a model id and a dotted class path
    is skipped and reported.
    """


@hookspec
def pathbind_metrics() -> dict[str, Callable[..., object]]:
    """Return named metric or aggregation functions.

    A task YAML refers to one as ``!function pathbind.plugin_metrics.<name>``, e.g. as a
    ``metric_list`` aggregation (which receives the list of per-document values). Names must be Python
    identifiers and values callable.
    """


@hookspec
def pathbind_demo_data() -> dict[str, Callable[..., object]]:
    """Return named functions that make synthetic demo data: item generators and the wording of their questions.

    Controls train on what the generators draw with a seed other than the demo's own (0), asked in the tasks' own
    words; ``pathbind_tasks/demo/README.md`` lists PathBind's. Names must be Python identifiers and values callable.
    """


@hookspec
def pathbind_image_encoders() -> dict[str, Callable[..., object]]:
    """Return named image encoders: classes or factories that load a checkpoint.

    ``encoder(pretrained, features, dtype, device, processor_options)`` returns an object whose ``embed(image)``
    gives one float32 vector per PIL image and whose ``metadata()`` says how, as a JSON-ready dict; ``pathbind
    embed`` runs ``pathbind_hf`` (``features``: ``vision`` or ``projected``). Returning encoders must not import
    torch. Names must be Python identifiers and values callable.
    """


@hookspec
def pathbind_add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add subcommands to the ``pathbind`` command line.

    Call ``subparsers.add_parser(name, help=...)`` and set a ``func`` default taking the parsed
    ``argparse.Namespace`` and returning an exit code (0 ok, 1 failure; argparse uses 2 for usage errors).
    """


@hookspec
def pathbind_compare_with_baseline(results: dict[str, Any], baseline: str) -> None:
    """Pair a finished run with lmms-eval's ``--baseline LOG``: add to ``results`` (lmms-eval's, with the samples of
    ``--log_samples``) each task's paired change against the run whose sample log ``LOG`` is, or log a warning that
    says why a task cannot be paired with it. Amends ``results`` in place and returns None.
    """
