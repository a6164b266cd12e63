"""Read lmms-eval ``--log_samples`` files: per item, whether one model answered it correctly in one condition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathbind.lmms_output import SAMPLE_LOGS, SampleLogError, find_sample_logs, read_sample_log, sample_record
from pathbind_analysis.curation.errors import CurationInputError


@dataclass
class ModelAnswers:
    """One model's answers in one condition, merged over its log files."""

    name: str
    condition: str
    files: list[Path] = field(default_factory=list)
    correct: dict[str, bool] = field(default_factory=dict)  # item id -> correct (an invalid answer is wrong)
    sources: dict[str, str] = field(default_factory=dict)  # item id -> source benchmark
    invalid: int = 0  # answers in the condition that could not be parsed
    other_conditions: Counter[str] = field(default_factory=Counter)  # records skipped, by condition
    skipped_files: list[str] = field(default_factory=list)  # "file: why", for logs found in a folder


def parse_model_argument(text: str) -> tuple[str, Path]:
    """``NAME=PATH`` or ``PATH``; without a name, the log's folder names the model (lmms-eval's layout)."""
    name, sep, rest = text.partition("=")
    if sep and name and "/" not in name:
        if not rest:
            raise CurationInputError(f"{text!r}: no path after '='; write NAME=PATH")
        return name, Path(rest)
    path = Path(text)
    return (path if path.is_dir() else path.parent).resolve().name, path


def log_files(path: Path) -> list[Path]:
    """The sample logs a path names: the file itself, or every ``*_samples_*.jsonl`` below a folder."""
    if not path.exists():
        raise CurationInputError(f"{path}: no such file or folder; pass an lmms-eval --log_samples .jsonl file")
    found = find_sample_logs(path)
    if not found:
        raise CurationInputError(f"{path}: no sample logs ({SAMPLE_LOGS}) below this folder; "
                                 "run lmms_eval with --log_samples")
    return found


def read_logs(paths: list[Path], read_file: Callable[[Path], str]) -> list[str]:
    """Call ``read_file`` (which returns why a file holds nothing usable, "" when it does) on every log the paths
    name; a file named directly must be usable, one found in a folder is skipped: returns those as "file: why"."""
    skipped = []
    for path in paths:
        for file in log_files(path):
            problem = read_file(file)
            if problem and path.is_file():
                raise CurationInputError(f"{file}: {problem}")
            if problem:
                skipped.append(f"{file}: {problem}")
    return skipped


def read_model_answers(name: str, paths: list[Path], *, condition: str = "text") -> ModelAnswers:
    """Merge a model's logs; an item answered twice or a damaged line is an error naming the file and line.

    A log file given by name must hold answers in ``condition``; one found in a folder that holds none (an
    image-only or non-PathBind task run beside the others) is skipped and listed in ``skipped_files``.
    """
    answers = ModelAnswers(name=name, condition=condition)
    seen_at: dict[str, str] = {}  # item id -> "file:line", to name both places of a duplicate
    answers.skipped_files = read_logs(paths, lambda file: _read_file(file, answers, seen_at))
    if not answers.correct:
        raise CurationInputError(f"model '{name}' has no usable log: " + "; ".join(answers.skipped_files))
    return answers


def _read_file(file: Path, answers: ModelAnswers, seen_at: dict[str, str]) -> str:
    """Add the file's answers in the model's condition; return why it has none ("" when it has some)."""
    conditions: Counter[str] = Counter()
    unscored = ""  # the first line without a score record
    try:
        for number, sample in read_sample_log(file):
            where = f"{file}:{number}"
            record = _score_record(sample)
            if record is None:
                unscored = unscored or where
                continue
            conditions[str(record["condition"])] += 1
            if record["condition"] == answers.condition:
                _add(answers, record, sample, file, where, seen_at)
    except SampleLogError as exc:
        raise CurationInputError(str(exc)) from exc
    if not conditions:
        return ("holds no PathBind score records (a metric value with 'id', 'condition' and 'correct'); "
                "pass sample logs of PathBind tasks")
    if unscored:
        raise CurationInputError(f"{unscored}: no PathBind score record, unlike the file's other lines; the log "
                                 "is damaged: write it again with lmms_eval --log_samples")
    if answers.condition not in conditions:
        found = ", ".join(f"{n} '{c}'" for c, n in sorted(conditions.items()))
        return (f"no '{answers.condition}'-condition answers (found {found}); evaluate a task that asks its items "
                "without the image (PathBind VQA tasks ask each item with and without it) or choose the condition "
                "with --condition")
    answers.files.append(file)
    answers.other_conditions.update({c: n for c, n in conditions.items() if c != answers.condition})
    return ""


def _add(answers: ModelAnswers, record: dict[str, Any], sample: dict[str, Any], file: Path, where: str,
         seen_at: dict[str, str]) -> None:
    item = record["id"]
    if item is None or str(item) in ("", "None"):
        raise CurationInputError(f"{where}: field 'id' of the score record is {item!r}; give the task's documents "
                                 "an 'id' column")
    item = str(item)
    if item in answers.correct:
        raise CurationInputError(f"{where}: item {item!r} is answered twice by model '{answers.name}' (also at "
                                 f"{seen_at[item]}); if these logs come from different models name them "
                                 "NAME=PATH, otherwise pass each task's log once")
    if not isinstance(record["correct"], bool):
        raise CurationInputError(f"{where}: field 'correct' is {record['correct']!r}, not true/false; "
                                 "re-score the log with a PathBind task")
    answers.correct[item] = record["correct"]
    if record.get("valid") is False:
        answers.invalid += 1
    answers.sources[item] = _source(record, sample, file)
    seen_at[item] = where


def _score_record(sample: Any) -> dict[str, Any] | None:
    record = sample_record(sample)
    return record if record is not None and {"id", "condition", "correct"} <= record.keys() else None


def _source(record: dict[str, Any], sample: dict[str, Any], file: Path) -> str:
    # lmms-eval 0.7.3 drops "doc" from the log, so the task name (one task per source benchmark) is the
    # usual answer; a "source" in the record or a logged doc wins when present.
    doc = sample.get("doc")
    for value in (record.get("source"), doc.get("source") if isinstance(doc, dict) else None):
        if value not in (None, ""):
            return str(value)
    _, sep, task = file.name.removesuffix(".jsonl").partition("_samples_")
    return task if sep and task else "unknown"
