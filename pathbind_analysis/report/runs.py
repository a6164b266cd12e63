"""One model's lmms-eval output folder: its name and the metrics of every task it ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathbind.faults import folder_fault
from pathbind.lmms_output import ResultsError, by_date, find_results, load_results
from pathbind.summary import coverage_flag

BASELINE_MODEL = "pathbind_baseline"  # runs of this model are shown as baseline rows, not competitors


class ReportError(ValueError):
    """An input the report cannot use at all; the message names the file or folder and what is missing."""


@dataclass
class Run:
    name: str
    path: Path
    model: str
    results: dict[str, dict[str, Any]]  # task -> metric -> value, the ",none" filter suffix dropped
    groups: frozenset[str] = frozenset()  # results entries that are groups of other tasks
    skipped: tuple[str, ...] = ()  # result files below the folder that are not usable, each with why
    data: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> the data it read (pathbind.data)
    files: dict[str, list[Path]] = field(default_factory=dict)  # task -> the results files holding it, latest first
    versions: dict[str, Any] = field(default_factory=dict)  # task -> its version (the YAML's metadata.version)
    software: dict[str, str] = field(default_factory=dict)  # task -> "lmms-eval 0.7.3, pathbind 0.1.0" ("" unknown)
    unscored: frozenset[str] = frozenset()  # tasks whose results come from a --predict_only run
    unrecorded: frozenset[str] = frozenset()  # tasks whose results file holds no PathBind record of data at all
    failed: dict[str, str] = field(default_factory=dict)  # task -> why it failed in its run

    @property
    def baseline(self) -> bool:
        return self.model == BASELINE_MODEL

    def metric(self, task: str, metric: str) -> Any:
        """The value, or None when the run has no such task or metric."""
        return self.results.get(task, {}).get(metric)

    def name_on(self, task: str) -> str:
        """The run's name in a headline table of ``task``, flagged when the task evaluated too few of its rows
        ("run [2 of 12 evaluated]", :func:`pathbind.summary.coverage_flag`)."""
        flag = coverage_flag(self.metric(task, "accounting"))
        return f"{self.name} [{flag}]" if flag else self.name


def load_runs(paths: list[Path]) -> list[Run]:
    """Every folder's runs merged by task (a later results.json wins), with distinct display names."""
    runs = [_load_run(path) for path in paths]
    return _distinct(runs)


def _load_run(path: Path) -> Run:
    if fault := folder_fault(path):
        raise ReportError(f"{fault} (give lmms-eval --output_path folders)")
    files = by_date(find_results([path]))
    if not files:
        raise ReportError(f"{path}: no lmms-eval *_results.json below it (lmms-eval exits 0 even when a run "
                          "fails: check its log)")
    run = Run("", path, "", {})
    config: dict[str, Any] = {}
    groups: set[str] = set()
    skipped = []
    for file in files:  # oldest first: a task's latest run wins, and its other files are listed
        try:
            loaded = load_results(file)
        except ResultsError as exc:
            skipped.append(str(exc))
            continue
        config = loaded.config or config
        groups |= loaded.groups
        for task in loaded.results:
            run.results[task] = loaded.metrics(task)
            run.files[task] = [file, *run.files.get(task, [])]
            run.versions[task], run.software[task] = loaded.versions.get(task), loaded.software_text()
            run.data.pop(task, None)
            run.failed.pop(task, None)
        run.data |= loaded.data
        run.failed |= loaded.failed
        run.unscored = (run.unscored - set(loaded.results)) | (set(loaded.results) if loaded.predict_only else set())
        run.unrecorded = (run.unrecorded - set(loaded.results)) | (set() if loaded.data else set(loaded.results))
    if not run.results:
        raise ReportError(f"{path}: no usable lmms-eval results file below it: {'; '.join(skipped)}")
    run.name, run.model = _model_name(config, path), str(config.get("model") or path.name)
    run.groups, run.skipped = frozenset(groups), tuple(skipped)
    return run


def _model_name(config: dict[str, Any], path: Path) -> str:
    """The checkpoint's last path part when ``pretrained`` is given (``Qwen/Qwen2.5-VL-7B`` -> ``Qwen2.5-VL-7B``)."""
    args = config.get("model_args") or ""
    pairs = dict(item.split("=", 1) for item in args.split(",") if "=" in item) if isinstance(args, str) else args
    pretrained = str(pairs.get("pretrained") or pairs.get("model_version") or pairs.get("model") or "")
    return pretrained.rstrip("/").split("/")[-1] or str(config.get("model") or path.name)


def _distinct(runs: list[Run]) -> list[Run]:
    """Same-named runs get their folder name appended, then a counter if the folders share a name too."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.name] = counts.get(run.name, 0) + 1
    seen: set[str] = set()
    for run in runs:
        name = f"{run.name} ({run.path.name})" if counts[run.name] > 1 else run.name
        candidate, index = name, 2
        while candidate in seen:
            candidate, index = f"{name} #{index}", index + 1
        run.name = candidate
        seen.add(candidate)
    return runs
