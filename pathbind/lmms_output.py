"""lmms-eval's output: the results files and sample logs below a run folder, found and read, errors naming the file."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pathbind.provenance import RECORD_FAILED, record_failure

# lmms-eval writes <output_path>/<model>/<date>_results.json and, with --log_samples, <date>_samples_<task>.jsonl.
RESULTS = "*results.json"
SAMPLE_LOGS = "*_samples_*.jsonl"
# A PathBind task's line holds its record once, under this key; logs of PathBind 0.x repeat it under each metric name.
RECORD = "pathbind"


class ResultsError(ValueError):
    """A file that is not a usable lmms-eval results file; the message names it and says why."""


class SampleLogError(ValueError):
    """A sample log that cannot be read; the message names the file, and the line where one is at fault."""


@dataclass(frozen=True)
class ResultFile:
    """One lmms-eval results file: the model label and each task's metrics (keys with their filter suffix)."""

    path: Path
    model: str
    results: dict[str, dict[str, Any]]
    groups: frozenset[str]  # results entries that are groups (their subtasks carry the row accounting)
    config: dict[str, Any]  # lmms-eval's run configuration (model, model_args, ...)
    data: dict[str, Any]  # task -> the data it read (``pathbind.data``); empty for runs before PathBind recorded it
    versions: dict[str, Any] = field(default_factory=dict)  # task -> its YAML's metadata.version
    software: dict[str, str] = field(default_factory=dict)  # "lmms-eval", "pathbind" -> the installed version
    failed: dict[str, str] = field(default_factory=dict)  # task -> why it failed (``pathbind.failed_tasks``)
    configs: dict[str, Any] = field(default_factory=dict)  # task -> its configuration as lmms-eval wrote it

    def config_of(self, task: str) -> dict[str, Any]:
        return _mapping(self.configs.get(task))

    @property
    def predict_only(self) -> bool:
        """A ``--predict_only`` run: lmms-eval logged the answers and scored none (each task's one metric is its
        ``bypass`` placeholder, 999)."""
        cli = self.config.get("resolved_cli_args")
        return bool(isinstance(cli, dict) and cli.get("predict_only")) or any(
            "bypass,none" in metrics for metrics in self.results.values())

    def software_text(self) -> str:
        """``lmms-eval 0.7.3, pathbind 0.1.0``; "" for a run that recorded none."""
        return ", ".join(f"{name} {version}" for name, version in sorted(self.software.items()))

    def metrics(self, task: str) -> dict[str, Any]:
        """The task's metrics by name (``"acc"`` for ``"acc,none"``), stderr entries left out."""
        return {key.split(",")[0]: value for key, value in self.results[task].items()
                if "," in key and "_stderr" not in key}


def find_results(paths: list[Path]) -> list[Path]:
    """lmms-eval result files (``*results.json``) given directly or found below folders, by path."""
    return [file for path in paths for file in ([path] if path.is_file() else sorted(path.rglob(RESULTS)))]


def find_sample_logs(path: Path, task: str | None = None) -> list[Path]:
    """The sample log ``path`` names, or those below the folder (of ``task``, else of every task), by path."""
    return [path] if path.is_file() else sorted(path.rglob(f"*_samples_{task}.jsonl" if task else SAMPLE_LOGS))


def by_date(files: list[Path]) -> list[Path]:
    """Oldest first: lmms-eval starts each file name with the run's date and time."""
    return sorted(files, key=lambda file: file.name)


def load_results(path: Path) -> ResultFile:
    """Read and check one results file; ResultsError (naming the file) for anything lmms-eval did not write."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not a text file ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON, perhaps truncated ({exc})") from exc
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, dict):
        raise ResultsError(f"{path}: not an lmms-eval results file (no \"results\" object)")
    if not results:
        raise ResultsError(f"{path}: its \"results\" object holds no task")
    malformed = sorted(str(task) for task, metrics in results.items() if not isinstance(metrics, dict))
    if malformed:
        raise ResultsError(f"{path}: the results of {', '.join(malformed)} are not objects of metrics")
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    model = str(config.get("model", "?"))
    if config.get("model_args"):  # e.g. two pathbind_baseline strategies, or two checkpoints of pathbind_hf
        model += f" ({config['model_args']})"
    subtasks = data.get("group_subtasks") if isinstance(data.get("group_subtasks"), dict) else {}
    report = data.get("pathbind") if isinstance(data.get("pathbind"), dict) else {}
    read = report.get("data")
    if isinstance(read, dict) and isinstance(read.get("error"), str):  # the whole record failed: each task's did
        read = {task: {"error": read["error"]} for task in results}
    return ResultFile(path, model, results, frozenset(name for name, tasks in subtasks.items() if tasks), config,
                      {task: record for task, record in (read or {}).items() if isinstance(record, dict)},
                      _mapping(data.get("versions")), _texts(report.get("software")),
                      _texts(report.get("failed_tasks")), _mapping(data.get("configs")))


def _texts(value: Any) -> dict[str, str]:
    return {str(key): str(item) for key, item in _mapping(value).items()}


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


@dataclass(frozen=True)
class TaskRun:
    """The run of one task below a folder: the ``chosen`` results file (the latest holding the task, or the file
    given), its sample log of the task (written by the same lmms-eval run, same date in its name; None without
    ``--log_samples``), and the other results files that hold the task too (``passed_over``, newest first)."""

    task: str
    chosen: ResultFile
    samples: Path | None
    passed_over: tuple[Path, ...] = ()

    def choice(self) -> str:
        """Which results file was taken, and why, when the folder holds several with the task; "" otherwise."""
        if not self.passed_over:
            return ""
        return (f"{len(self.passed_over) + 1} results files hold task {self.task}: using {self.chosen.path} (the "
                f"latest, by the date lmms-eval puts in its name) over {', '.join(map(str, self.passed_over))}; "
                "give a results file instead of its folder to use another")


def task_run(path: Path, task: str) -> TaskRun:
    """The run of ``task`` in ``path`` (a results file, or an output folder: the latest of its results files that
    holds the task); ValueError naming what the path holds instead when none does, ResultsError for a given file
    that is not a results file. Unreadable results files below a folder are passed over (named when no file holds
    the task)."""
    files = [path] if path.is_file() else list(reversed(by_date(find_results([path]))))
    holding, held, unreadable = [], set(), []
    for file in files:
        try:
            loaded = load_results(file)
        except ResultsError as exc:
            if path.is_file():
                raise
            unreadable.append(str(exc))
            continue
        held |= set(loaded.results) - loaded.groups
        if task in loaded.results:
            holding.append(loaded)
    if not holding:
        found = f"its runs evaluated {', '.join(sorted(held))}" if held else "it holds no usable results file"
        skipped = f"; unreadable: {'; '.join(unreadable)}" if unreadable else ""
        raise TaskNotRun(f"{path}: no run of task {task!r} ({found}{skipped})")
    chosen = holding[0]
    samples = chosen.path.with_name(chosen.path.name.removesuffix("results.json") + f"samples_{task}.jsonl")
    return TaskRun(task, chosen, samples if samples.is_file() else None, tuple(f.path for f in holding[1:]))


class TaskNotRun(ValueError):
    """No results file below a folder holds the task; the message names the tasks its runs evaluated."""


def task_results(run_dir: Path, task: str) -> dict[str, Any]:
    """The results entry of ``task`` in its :func:`task_run` (keys as lmms-eval writes them, ``"acc,none"``)."""
    return task_run(run_dir, task).chosen.results[task]


def task_data(run_dir: Path, task: str) -> dict[str, Any] | None:
    """The data record (``pathbind.data``) of ``task`` in its :func:`task_run`; None when that file has none (a
    run before PathBind recorded it, or a task that is not PathBind's); ResultsError when the record failed."""
    chosen = task_run(run_dir, task).chosen
    record = chosen.data.get(task)
    if failure := record_failure(record):
        raise ResultsError(f"{chosen.path}: task {task}: {RECORD_FAILED} ({failure})")
    return record if record and "fingerprint" in record else None


def task_samples(run_dir: Path, task: str) -> list[dict[str, Any]]:
    """Every line of the sample log of ``task`` its :func:`task_run` wrote; ValueError naming the results file and
    the fix when there is none, or the log when it is empty."""
    found = task_run(run_dir, task)
    if found.samples is None:
        raise ValueError(f"{found.chosen.path}: no sample log of task {task!r} beside it (run lmms_eval with "
                         f"--log_samples and --tasks {task})")
    samples = [sample for _, sample in read_sample_log(found.samples)]
    if not samples:
        raise ValueError(f"{found.samples}: the sample log of task {task!r} is empty (the run evaluated no document, "
                         "or was cut short before writing it)")
    return samples


def sample_record(sample: Any) -> dict[str, Any] | None:
    """PathBind's record of one sample-log line (its ``"pathbind"`` entry; in a 0.x log the copy under its first
    metric name, the first object with an ``id``), or None for a line of a task that is not PathBind's."""
    if not isinstance(sample, dict):
        return None
    record = sample.get(RECORD)
    if isinstance(record, dict):
        return record
    return next((value for key, value in sample.items() if key != "doc" and isinstance(value, dict) and "id" in value),
                None)


def read_sample_log(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a sample log (``.jsonl``, or ``.jsonl.gz``), streamed."""
    try:
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield number, json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise SampleLogError(f"{path}:{number}: not valid JSON ({exc.msg}); a sample log holds "
                                             "one JSON object per line, as lmms-eval --log_samples writes") from None
    except OSError as exc:
        raise SampleLogError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise SampleLogError(f"{path}: not a text file ({exc.reason})") from exc


def _open_text(path: Path) -> TextIO:
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return path.open(encoding="utf-8-sig")
