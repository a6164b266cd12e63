"""``pathbind data check``: will a data folder give the documents its tasks expect, before any model is loaded?

A folder is read as a run reads it: the task YAML's data settings with ``PATHBIND_DATA`` applied
(:func:`pathbind.data.apply_data_root`), the ``datasets`` call of lmms-eval's ``ConfigurableTask.download``, then
the task's own ``process_docs`` (its image-only variant, which converts the same rows once each). The report gives
the files the source's ``LAYOUT`` expects, the rows of each split, the rows kept, every drop reason (a fault of
the data with its first item and detail), and any error that would stop the task. A drop counts as a problem unless
the task marked it as its selection (``drop(reason, selection=True)``: another split, a question type it does not
ask), so one rule, kept where the rows are dropped, decides.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from loguru import logger

from pathbind.catalog import plugin_tasks, task_config
from pathbind.data import DATA_ENV, DataLocationError, apply_data_root, data_name, files_read
from pathbind.faults import folder_fault
from pathbind.layout import Layout
from pathbind.lmms.running import Ledger, RunningTask, running
from pathbind.plugins import PluginManager
from pathbind.provenance import folder_summary, record_error

DATA_KEYS = ("dataset_path", "dataset_name", "dataset_kwargs", "test_split")
# Keys of dataset_kwargs that lmms-eval 0.7.3's download consumes itself and never hands to datasets.
LMMS_EVAL_KEYS = ("From_YouTube", "video", "cache_dir", "builder_script", "force_download", "force_unzip",
                  "local_files_only", "create_link", "load_from_disk")


@dataclass(frozen=True)
class Line:
    """One line of a report; ``problem`` lines make the check fail."""

    text: str
    problem: bool = False


@dataclass
class TaskReport:
    """What one task made of the folder: rows read per split and the ledger of its ``process_docs``."""

    task: str
    process_docs: str
    split: str  # the split the task evaluates (its test_split)
    splits: dict[str, int] = field(default_factory=dict)
    rows: int | None = None
    kept: int | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    selection: list[str] = field(default_factory=list)  # the reasons in dropped that define the task
    examples: dict[str, str] = field(default_factory=dict)  # a fault's reason -> "'<id>': <detail>" of its first
    error: str = ""  # the task would fail with it

    def lines(self) -> list[Line]:
        if self.error:
            return [*self._read(), Line(f"{self.task}: the task would fail: {self.error}", problem=True)]
        return [*self._read(), *self._drops()]

    def moved(self, old: str, new: str) -> None:
        """Name folder ``new`` where the messages name ``old``."""
        self.error = self.error.replace(old, new)
        self.examples = {reason: item.replace(old, new) for reason, item in self.examples.items()}

    def _read(self) -> list[Line]:
        if not self.splits:
            return []
        counts = ", ".join(f"{name} {n}" + (" (evaluated)" if name == self.split else "")
                           for name, n in self.splits.items())
        return [Line(f"{self.task}: rows loaded per split: {counts}")]

    def _drops(self) -> list[Line]:
        if self.rows is None:
            return [Line(f"{self.task}: no row accounting (its process_docs keeps no ledger)")]
        lines = [Line(f"{self.task}: {self.kept} of {_rows(self.rows)} kept")]
        for reason, count in sorted(self.dropped.items()):
            by_design = reason in self.selection
            note = " (the task's selection)" if by_design else ""
            if reason in self.examples:
                note += f" (first {self.examples[reason]})"
            lines.append(Line(f"{self.task}: {_rows(count)} dropped: {reason}{note}", problem=not by_design))
        return lines


@dataclass
class SourceReport:
    """The check of one source's folder: its files against the source's layout, then each task's report."""

    source: str
    folder: str
    files: list[Line] = field(default_factory=list)
    tasks: list[TaskReport] = field(default_factory=list)

    def lines(self) -> list[Line]:
        return [*self.files, *(line for task in self.tasks for line in task.lines())]

    def problems(self) -> list[str]:
        return [line.text for line in self.lines() if line.problem]

    def summary(self) -> str:
        """Rows kept of rows read, task by task (tasks may read the same rows), then the number of problems."""
        problems = len(self.problems())
        verdict = f"{problems} problem(s)" if problems else "no problems"
        kept = ", ".join(f"{t.task} {t.kept}/{t.rows}" for t in self.tasks if t.rows is not None)
        return f"rows kept: {kept}; {verdict}" if kept else verdict

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "folder": self.folder, "ok": not self.problems(), "problems": self.problems(),
                "lines": [asdict(line) for line in self.lines()], "tasks": [asdict(task) for task in self.tasks]}


@dataclass(frozen=True)
class Plan:
    """A task whose documents the check builds, and the ``process_docs`` it runs for it."""

    task: str
    config: dict[str, Any]
    process_docs: str | None  # dotted path


Sources = dict[str, list[tuple[str, dict[str, Any]]]]  # data name -> its tasks' names and configs


def check(sources: Sources, folder: Path, source: str | None = None) -> list[SourceReport]:
    """Check ``folder`` as the data of ``source`` (``folder`` may be the root holding it); without one, ``folder``
    is a ``PATHBIND_DATA`` root and each folder in it named after a source is checked (see :func:`source_tasks`).

    Raises DataLocationError for an unknown source, no such folder, or a root holding no source's folder.
    """
    if fault := folder_fault(folder):
        raise DataLocationError(fault)
    if source is not None:
        if folder.name != source and (folder / source).is_dir():  # a root holding the source's folder
            folder = folder / source
        return [check_source(source, folder.absolute(), _plans(sources, source))]
    present = [d for d in sorted(folder.iterdir()) if d.is_dir() and d.name in sources]
    if not present:
        raise DataLocationError(f"{folder} holds no folder named after a data source (it holds "
                                f"{_names(folder) or 'nothing'}); sources: {', '.join(shared_sources(sources))}, "
                                "or a task's name")
    return [check_source(d.name, d.absolute(), _plans(sources, d.name)) for d in present]


def source_tasks(pm: PluginManager) -> Sources:
    """Each data source with its tasks' names and configs: the folder name a run looks for, ``data_name`` (a
    task's ``metadata.pathbind_data``, else the task's own name)."""
    sources: Sources = {}
    for entry in (e for e in plugin_tasks(pm) if e.kind == "task"):
        config = task_config(entry)
        sources.setdefault(data_name(config), []).append((entry.name, config))
    return sources


def shared_sources(sources: Sources) -> list[str]:
    """The sources that tasks name in ``metadata.pathbind_data`` (the benchmarks), not a task's own name."""
    return sorted(name for name, tasks in sources.items()
                  if any((config.get("metadata") or {}).get("pathbind_data") for _, config in tasks))


def unused_folders(sources: Sources, root: Path) -> list[str]:
    """The folders of a ``PATHBIND_DATA`` root that no task reads (a typo is never read, silently)."""
    return [d.name for d in sorted(root.iterdir()) if d.is_dir() and d.name not in sources]


def _plans(sources: Sources, source: str) -> list[Plan]:
    if source not in sources:
        close = get_close_matches(source, list(sources), n=3)
        hint = f"Did you mean {', '.join(close)}? " if close else ""
        raise DataLocationError(f"unknown data source {source!r}. {hint}Available: "
                                f"{', '.join(shared_sources(sources))}, or the name of a task that names none")
    return plans(sources[source])


def plans(tasks: list[tuple[str, dict[str, Any]]]) -> list[Plan]:
    """One plan per distinct (data settings, conversion): a task's ``full``, ``ablation``, ``paraphrase`` and
    ``think`` variants convert the same rows as its image-only one, which the check runs (named after the task that
    runs it)."""
    chosen: dict[str, Plan] = {}
    for task, config in sorted(tasks, key=lambda item: (_image_only(item[1]) != item[1].get("process_docs"),
                                                        item[0])):
        path = _image_only(config)
        key = json.dumps([{k: config.get(k) for k in DATA_KEYS}, path], sort_keys=True, default=str)
        chosen.setdefault(key, Plan(task, config, path))
    return sorted(chosen.values(), key=lambda plan: plan.task)


def _image_only(config: dict[str, Any]) -> str | None:
    """``<module>.<prefix>image_only`` for a ``process_docs`` named ``<prefix>full``, ``<prefix>ablation`` or
    ``<prefix>paraphrase`` (the condition sets of ``pathbind_tasks.common.vqa.condition_sets``) when the module has
    it; else the task's own."""
    path = config.get("process_docs")
    if not isinstance(path, str):
        return None
    module, _, name = path.rpartition(".")
    for suffix in ("full", "ablation", "paraphrase"):
        sibling = name.removesuffix(suffix) + "image_only"
        if name.endswith(suffix) and hasattr(_module(module), sibling):
            return f"{module}.{sibling}"
    return path


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # the task's own run reports it, as the failure the task would have
        return None


def check_source(source: str, folder: Path, plans_: list[Plan]) -> SourceReport:
    """The report of one source's folder: layout, then each plan run with PATHBIND_DATA pointing at it."""
    report = SourceReport(source, str(folder), files=[*layout_lines(folder, plans_), *record_lines(folder)])
    with _quiet_progress(), data_root_for(source, folder) as root, _naming(str(root / source), str(folder)):
        report.tasks = [run_plan(plan) for plan in plans_]
    for task in report.tasks:  # messages name the user's folder, not the link that stood in for it
        task.moved(str(root / source), str(folder))
    return report


def layout_lines(folder: Path, plans_: list[Plan]) -> list[Line]:
    """The files found against every ``LAYOUT`` the source's ``process_docs`` modules declare."""
    modules = {path.rpartition(".")[0] for p in plans_ if isinstance(path := p.config.get("process_docs"), str)}
    layouts = {name: getattr(_module(name), "LAYOUT", None) for name in sorted(modules)}
    lines = [Line(f"{name}.LAYOUT is a {type(layout).__name__}, not a pathbind.layout.Layout",
                  problem=True) for name, layout in layouts.items() if layout is not None
             and not isinstance(layout, Layout)]
    declared = list(dict.fromkeys(layout for layout in layouts.values() if isinstance(layout, Layout)))
    if not declared:
        return [*lines, Line(f"no published layout declared (LAYOUT in {', '.join(sorted(modules))}); files not "
                             "checked, only read")]
    located = [files_read(plan.config, folder) for plan in plans_]
    read = sorted({name for names in located if names is not None for name in names}) if all(located) else None
    for layout in declared:
        found, missing = layout.compare(folder, read)
        where = f"; see {layout.readme}" if layout.readme else ""
        if found:
            lines.append(Line(f"files found: {', '.join(found)}"))
        lines += [Line(f"missing: {entry} (expected in {folder}{where})", problem=True) for entry in missing]
    return lines


def record_lines(folder: Path) -> list[Line]:
    """The files that would make the run's record of the data (``pathbind.data``) fail, in the run's words: a
    file of a subfolder that cannot be read (a link to nothing, a link loop)."""
    lines = []
    for sub in (p for p in sorted(folder.iterdir()) if p.is_dir()):
        try:
            folder_summary(sub, folder)
        except OSError as exc:
            lines.append(Line(f"{record_error(exc)}: the run's record of the data would fail", problem=True))
    return lines


@contextmanager
def _naming(old: str, new: str) -> Iterator[None]:
    """Log messages name folder ``new`` where they name ``old`` (the check's link to it, deleted afterwards)."""
    def patch(record: Any) -> None:
        record["message"] = record["message"].replace(old, new)

    logger.configure(patcher=patch)
    try:
        yield
    finally:
        logger.configure(patcher=lambda record: None)


@contextmanager
def data_root_for(source: str, folder: Path) -> Iterator[Path]:
    """``PATHBIND_DATA`` set, for the duration, to a root whose ``<source>/`` is ``folder``: its parent when it is
    named so, else a temporary folder linking to it (the tasks find their data by that name)."""
    with tempfile.TemporaryDirectory(prefix="pathbind-data-check-") as scratch:
        root = folder.parent
        if folder.name != source:
            root = Path(scratch)
            (root / source).symlink_to(folder, target_is_directory=True)
        previous = os.environ.get(DATA_ENV)
        os.environ[DATA_ENV] = str(root)
        try:
            yield root
        finally:
            if previous is None:
                os.environ.pop(DATA_ENV, None)
            else:
                os.environ[DATA_ENV] = previous


@contextmanager
def _quiet_progress() -> Iterator[None]:
    """No datasets progress bars between the report lines (restored after)."""
    from datasets.utils import logging as datasets_logging

    enabled = datasets_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            datasets_logging.enable_progress_bar()


def run_plan(plan: Plan) -> TaskReport:
    """Load the task's data as lmms-eval would and build its documents; any exception is the task's failure."""
    config = plan.config
    report = TaskReport(plan.task, str(plan.process_docs), str(config.get("test_split") or "test"))
    try:
        located = apply_data_root(config)
        dataset = load_like_lmms_eval(located)
        report.splits = {str(name): len(rows) for name, rows in dataset.items()}
        if report.split not in dataset:
            raise ValueError(f"no split {report.split!r} (the task evaluates it); the data has "
                           f"{', '.join(report.splits) or 'none'}")
        metadata = config.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        with running(RunningTask(plan.task, (located.get("dataset_kwargs") or {}).get("data_files"),
                                 located.get("dataset_path"),
                                 cluster=str(metadata.get("pathbind_cluster") or "image"))) as task:
            docs = _function(plan.process_docs)(dataset[report.split])
    except Exception as exc:
        report.error = f"{type(exc).__name__}: {exc}"
        return report
    read_ledger(report, docs, task.ledger)
    return report


def load_like_lmms_eval(config: dict[str, Any]) -> Any:
    """The ``DatasetDict`` lmms-eval 0.7.3's ``ConfigurableTask.download`` loads for ``config`` (its
    ``load_from_disk`` branch, or ``datasets.load_dataset`` with the task's path, name and remaining kwargs)."""
    import datasets

    kwargs = {k: v for k, v in (config.get("dataset_kwargs") or {}).items() if k not in LMMS_EVAL_KEYS}
    if (config.get("dataset_kwargs") or {}).get("load_from_disk"):  # a DatasetDict (one split is read as arrow)
        return datasets.load_from_disk(config["dataset_path"])
    return datasets.load_dataset(path=config["dataset_path"], name=config.get("dataset_name"),
                                 download_mode=datasets.DownloadMode.REUSE_DATASET_IF_EXISTS, num_proc=1, **kwargs)


def _function(path: str | None) -> Callable[[Any], Any]:
    if path is None:
        return lambda dataset: dataset  # lmms-eval evaluates the rows as they are
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def read_ledger(report: TaskReport, docs: Any, ledger: Ledger | None) -> None:
    """The ledger the task's ``process_docs`` kept (None: it keeps none)."""
    if len(docs) == 0:
        report.error = "its process_docs returned no documents: nothing to evaluate"
        return
    if ledger is not None and ledger.kept is not None:
        report.rows, report.kept, report.selection = ledger.rows, ledger.kept, sorted(ledger.selection)
        report.dropped, report.examples = dict(ledger.dropped), dict(ledger.examples)


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _names(folder: Path) -> str:
    return ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()))
