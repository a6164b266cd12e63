"""Which slides a model answered correctly in an external slide benchmark: a CSV of ``slide_id,correct`` or an
lmms-eval sample log whose documents name the slide, read into one verdict per slide."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pathbind.lmms_output import SampleLogError, read_sample_log, sample_record
from pathbind_analysis.audit.leakage.inventory import DETECT_ROWS, InventoryError, detect_field, open_text, split_column
from pathbind_metrics.tcga import slide_key

TRUE, FALSE = {"1", "true", "yes", "correct", "1.0"}, {"0", "false", "no", "wrong", "incorrect", "0.0"}
RULES = ("all", "any")  # a slide with several external items is correct when all of them are, or any one


class ExternalError(ValueError):
    """An external source the command cannot read; the message names the file, line or field and the fix."""


@dataclass
class External:
    """Each slide's external verdict (correct or not), with what was read and what was dropped, and why."""

    path: Path
    slides: dict[str, bool]
    items: int
    dropped: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)  # a few slide keys, for messages

    def summary(self) -> dict[str, object]:
        return {"path": str(self.path), "items": self.items, "slides": len(self.slides),
                "correct_slides": sum(self.slides.values()), "dropped": dict(self.dropped)}


def read_external(spec: str, *, metric: str = "correct", rule: str = "all") -> External:
    """``FILE.csv`` / ``FILE.tsv`` (columns ``slide_id`` and ``correct``: 1/0, true/false, yes/no) or an lmms-eval
    sample log ``LOG.jsonl[:field]`` (``field``: the document field naming the slide, found when omitted; the
    per-sample ``metric``, 1 for a right answer). Each slide's items give one verdict by ``rule``. Rows without a
    slide id or a readable verdict are dropped, counted by reason."""
    if rule not in RULES:
        raise ExternalError(f"--rule {rule!r} is not one of {', '.join(RULES)}")
    path, column = split_column(spec)
    if not path.is_file():
        raise ExternalError(f"{spec}: no such file (give a CSV of slide_id,correct or an lmms-eval sample log)")
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    pairs, dropped = (_sample_log(spec, metric) if suffixes and suffixes[-1] == ".jsonl"
                      else _table(path, column, "\t" if suffixes and suffixes[-1] in (".tsv", ".tab") else ","))
    verdicts: dict[str, list[bool]] = {}
    for slide, correct in pairs:
        verdicts.setdefault(slide, []).append(correct)
    combine = all if rule == "all" else any
    slides = {slide: combine(values) for slide, values in verdicts.items()}
    if not slides:
        reasons = "; ".join(f"{reason} ({n})" for reason, n in dropped.items()) or "no rows"
        raise ExternalError(f"{path}: no row with a slide id and a verdict ({reasons})")
    return External(path, slides, len(pairs), dropped, sorted(slides)[:3])


def _table(path: Path, column: str | None, delimiter: str) -> tuple[list[tuple[str, bool]], Counter[str]]:
    id_field = column or "slide_id"
    pairs: list[tuple[str, bool]] = []
    dropped: Counter[str] = Counter()
    with open_text(path) as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        missing = [name for name in (id_field, "correct") if name not in (reader.fieldnames or [])]
        if missing:
            raise ExternalError(f"{path}: no column {', '.join(map(repr, missing))} (columns: "
                                f"{', '.join(reader.fieldnames or []) or 'none'}); write slide_id,correct, or name "
                                "the slide column as FILE:column")
        for row in reader:
            slide, verdict = (row.get(id_field) or "").strip(), (row.get("correct") or "").strip().lower()
            if not slide:
                dropped["no slide id"] += 1
            elif verdict not in TRUE | FALSE:
                dropped["'correct' is not 1/0, true/false or yes/no"] += 1
            else:
                pairs.append((slide_key(slide), verdict in TRUE))
    return pairs, dropped


def _sample_log(spec: str, metric: str) -> tuple[list[tuple[str, bool]], Counter[str]]:
    """A PathBind line's verdict is its record's (an answer refused or unreadable is wrong; only answers with the
    image count); another task's line gives ``metric``. The slide is the record's ``slide_id`` or the doc field."""
    path, field_name = split_column(spec)
    try:
        lines = [line for _, line in read_sample_log(path)]
    except SampleLogError as exc:
        raise ExternalError(str(exc)) from exc
    docs: list[dict] = [line["doc"] if isinstance(line, dict) and isinstance(line.get("doc"), dict) else {}
                        for line in lines]
    records = [sample_record(line) for line in lines]
    if field_name is None and not all(r and r.get("slide_id") for r in records):
        try:
            field_name = detect_field([d for d in docs[:DETECT_ROWS] if d], str(path))
        except InventoryError as exc:
            raise ExternalError(f"{exc}; or give LOG.jsonl:field") from exc
    pairs: list[tuple[str, bool]] = []
    dropped: Counter[str] = Counter()
    for line, doc, record in zip(lines, docs, records, strict=True):
        if record is not None and record.get("condition", "image") != "image":
            continue  # the same question asked without (or with another) image is not the benchmark's answer
        slide = str((record or {}).get("slide_id") or doc.get(field_name or "", "") or "").strip()
        verdict = _verdict(line, record, metric)
        if not slide:
            dropped[f"no slide id (record slide_id or doc field {field_name!r})"] += 1
        elif verdict is None:
            dropped[f"no verdict ({metric!r} 0 or 1, or a PathBind record's correct)"] += 1
        else:
            pairs.append((slide_key(slide), verdict))
    return pairs, dropped


def _verdict(line: dict, record: dict | None, metric: str) -> bool | None:
    if record is not None:
        if isinstance(record.get("correct"), bool):
            return bool(record["correct"])
        return False if record.get("outcome") in ("refused", "invalid") else None
    value = line.get(metric)
    return bool(value) if isinstance(value, bool | int | float) and value in (0, 1) else None
