"""Per-sample metrics of an lmms-eval sample log, stratified by each sample's leak status (the paper's Table 2)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pathbind.lmms_output import RECORD, SampleLogError, read_sample_log
from pathbind_analysis.audit.leakage.census import Census
from pathbind_analysis.audit.leakage.inventory import DETECT_ROWS, InventoryError, detect_field, split_column
from pathbind_metrics.leakage import leak_partition, stratified_metric
from pathbind_metrics.tcga import classify

# What lmms-eval writes on every sample-log line besides the metrics that process_results returned.
BOOKKEEPING = frozenset({"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "token_counts",
                         "doc_hash", "input_media"})
ALL = "all"


@dataclass
class Samples:
    """The slide id, metric values and subset fields of each sample of a log."""

    path: Path
    id_field: str
    ids: list[str]
    metrics: dict[str, np.ndarray]  # NaN where a line lacks the metric
    docs: list[dict[str, Any]]  # only the --by fields

    def binary_metrics(self) -> set[str]:
        """Metrics whose values are all 0 or 1 (accuracies: reported in percent, gaps in points)."""
        return {name for name, values in self.metrics.items() if set(values[~np.isnan(values)]) <= {0.0, 1.0}}


def read_samples(spec: str, *, metrics: list[str] | None = None, by: list[str] | None = None) -> Samples:
    """Read ``LOG.jsonl`` or ``LOG.jsonl:field`` (the doc field holding the slide id; found when not named).

    Metrics are the numeric and boolean values of a line outside :data:`BOOKKEEPING`; a record value with
    a ``correct`` entry (PathBind's VQA scoring) counts as the metric ``correct``.
    """
    path, field = split_column(spec)
    if not path.is_file():
        raise InventoryError(f"--samples: no such file: {path}")
    docs, values = [], []
    try:
        for line, record in read_sample_log(path):
            if not (isinstance(record, dict) and isinstance(record.get("doc"), dict)):
                raise InventoryError(f"{path}:{line}: not an lmms-eval sample-log line (no 'doc' object); pass the "
                                     "jsonl that lmms-eval --log_samples writes per task")
            docs.append(record["doc"])
            values.append(_metric_values(record))
    except SampleLogError as exc:
        raise InventoryError(str(exc)) from exc
    if not docs:
        raise InventoryError(f"{path}: no samples")
    doc_fields = list(dict.fromkeys(key for doc in itertools.islice(docs, DETECT_ROWS) for key in doc))
    field = field or detect_field(docs[:DETECT_ROWS], str(path))
    for name in [field, *(by or [])]:
        if not any(name in doc for doc in docs):
            raise InventoryError(f"{path}: no doc field {name!r}; doc fields: {', '.join(doc_fields)}")
    found = list(dict.fromkeys(name for line in values for name in line))
    if not found:
        raise InventoryError(f"{path}: no per-sample metric (a number, a boolean or a record with 'correct' next "
                             "to 'doc') on any line; was the task's process_results empty?")
    missing = [name for name in metrics or [] if name not in found]
    if missing:
        raise InventoryError(f"{path}: no per-sample metric {', '.join(map(repr, missing))}; metrics in the log: "
                             f"{', '.join(found)}")
    return Samples(path, field, [str(doc.get(field, "")) for doc in docs],
                   {name: np.array([line.get(name, math.nan) for line in values]) for name in metrics or found},
                   [{name: doc.get(name) for name in by or []} for doc in docs])


def stratify(samples: Samples, trains: list[Census], *,
             by: list[str] | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Rows ``{train, metric, subset, patient-leaked, site-leaked, clean, gap, excluded}`` and the id kinds counted.

    Subsets are ``all`` then ``FIELD=value`` for each ``by`` field (sorted values), as in the paper's Table 2.
    """
    classified = [classify(text) for text in samples.ids]
    kinds = {kind: sum(1 for k, _, _ in classified if k == kind) for kind in ("tcga", "unknown", "malformed")}
    # The items of one case (patient) are not independent: intervals resample cases.
    cases = np.array([b.case if b else text for (_, b, _), text in zip(classified, samples.ids, strict=True)],
                     dtype=object)
    subsets = [(ALL, np.ones(len(samples.ids), dtype=bool))]
    for name in by or []:
        labels = np.array(["(missing)" if doc[name] is None else str(doc[name]) for doc in samples.docs])
        subsets += [(f"{name}={value}", labels == value) for value in sorted(set(labels))]
    rows, binary = [], samples.binary_metrics()
    for train in trains:
        partitions = np.array([leak_partition(b.case, b.tss, train.cases, train.tss) if b else kind
                               for kind, b, _ in classified], dtype=object)
        for metric, values in samples.metrics.items():
            for subset, mask in subsets:
                table = stratified_metric(values[mask], list(partitions[mask]), clusters=list(cases[mask]),
                                          proportion=1.0 if metric in binary else None)
                rows.append({"train": train.name, "metric": metric, "subset": subset, **table})
    return rows, kinds


def _metric_values(record: dict[str, Any]) -> dict[str, float]:
    found: dict[str, float] = {}
    for key, value in record.items():
        # A PathBind line's "score" is its record's "correct" again, for lmms-eval's --baseline.
        if key in BOOKKEEPING or (key == "score" and RECORD in record):
            continue
        if isinstance(value, bool | int | float):
            found[key] = float(value)
        elif isinstance(value, dict) and isinstance(value.get("correct"), bool | int | float):
            found.setdefault("correct", float(value["correct"]))
    return found
