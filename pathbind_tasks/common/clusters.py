"""Which items share a cluster: the unit every interval resamples (:mod:`pathbind_metrics.resampling`).

Questions on one image are not independent, nor are the tiles of one slide or the slides of one patient. A task
names its cluster in its YAML, ``metadata: {pathbind_cluster: ...}``:

- ``image`` (the default): the items whose image files hold the same bytes;
- a column of the task's documents (``slide_id``, ``image_name``, ...): the items with the same value;
- ``case:<column>``: the items of one TCGA case (patient), read from the barcodes, slide ids or paths in the
  column, in any letter case.

``process_docs`` keeps each item's key in the ``cluster`` column as ``<pathbind_cluster>=<key>`` (e.g.
``image=3fa2...``, ``case:slide_path=TCGA-BH-A0BS``), so a record names what its cluster is, and drops an item
whose key is missing as a fault of its data; records carry the key. Records without one (documents not built by
a PathBind ``process_docs``) are each their own cluster, reported as ``"cluster": "item"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import datasets

from pathbind.faults import Fault
from pathbind.lmms.running import running_task
from pathbind_metrics.tcga import parse_barcode
from pathbind_tasks.common.accounting import FAULT, faults_column
from pathbind_tasks.common.columns import column_values, with_column

DEFAULT = "image"
ITEM = "item"  # what an interval resamples when the records name no cluster


def cluster_spec() -> str:
    """The running task's ``metadata.pathbind_cluster`` (``image`` outside lmms-eval)."""
    task = running_task()
    return task.cluster if task is not None else DEFAULT


def with_clusters(docs: datasets.Dataset, image_keys: Sequence[str]) -> datasets.Dataset:
    """``docs`` with each item's ``cluster`` key and a ``cluster_error`` (null when it has a key), the key read
    from ``image_keys`` (one per document: its image's digest) or from the column the task names."""
    spec = cluster_spec()
    if spec == DEFAULT:
        keys, errors = list(image_keys), [None] * len(docs)
    else:
        kind, _, column = spec.rpartition(":")
        if kind not in ("", "case") or not column:
            raise ValueError(f"metadata.pathbind_cluster {spec!r} is not 'image', a column name or 'case:<column>'")
        if column not in docs.column_names:
            raise ValueError(f"metadata.pathbind_cluster names the column {column!r}, which the documents do not "
                             f"have (columns: {', '.join(docs.column_names)})")
        found = [_key(value, column, kind == "case") for value in column_values(docs, column)]
        keys, errors = (list(part) for part in zip(*found, strict=True)) if found else ([], [])
    keys = [f"{spec}={key}" if key else "" for key in keys]
    docs = docs.remove_columns([name for name in ("cluster", "cluster_error") if name in docs.column_names])
    return with_column(with_column(docs, "cluster", keys), "cluster_error", faults_column(errors), FAULT)


def _key(value: Any, column: str, tcga_case: bool) -> tuple[str, Fault | None]:
    text = "" if value is None else str(value).strip()
    if not text:
        return "", Fault("no cluster key", f"field {column!r}, the task's pathbind_cluster, is empty")
    if not tcga_case:
        return text, None
    barcode = parse_barcode(text)
    if barcode is None:
        return "", Fault(f"no TCGA case in field {column!r}, the task's pathbind_cluster", repr(text))
    return barcode.case, None


def cluster_keys(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], str]:
    """Each record's cluster key and what a cluster is (the task's ``pathbind_cluster``) when every record names
    its cluster, else ``item`` with each record its own cluster (its id)."""
    keys = [str(record.get("cluster") or "") for record in records]
    if records and all(keys):
        return keys, keys[0].partition("=")[0]
    return [str(record.get("id", index)) for index, record in enumerate(records)], ITEM
