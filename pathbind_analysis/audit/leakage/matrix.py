"""The overlap matrix: each test inventory against each training inventory, every test item's leak partition."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathbind_analysis.audit.leakage.census import Census, to_stderr
from pathbind_analysis.audit.leakage.inventory import Source
from pathbind_metrics.leakage import CLEAN, PATIENT, SITE, leak_partition, overlap


@dataclass
class Audit:
    """Training and test censuses, the matrix rows, and the partitions file written per test inventory."""

    trains: list[Census]
    tests: list[Census]
    matrix: list[dict[str, Any]]
    partitions: dict[str, Path]


def group_sources(sources: list[Source]) -> dict[str, list[Source]]:
    """Sources by name, in the order given: files repeating a NAME form one inventory (their union)."""
    grouped: dict[str, list[Source]] = {}
    for source in sources:
        grouped.setdefault(source.name, []).append(source)
    return grouped


def run_audit(train: dict[str, list[Source]], test: dict[str, list[Source]], out_dir: Path, *,
              progress: Callable[[str], None] | None = to_stderr) -> Audit:
    """Read each training inventory into case/site sets, then stream each test inventory once against all of them.

    Writes ``out_dir/partitions_<test>.csv`` (file, line, id, case, tss, one ``partition_<train>`` column per
    training inventory: patient-leaked, site-leaked, clean, or unknown / malformed for ids without a barcode).
    """
    trains = [Census("train", name, out_dir, progress).read(sources) for name, sources in train.items()]
    audit = Audit(trains, [], [], {})
    for name, sources in test.items():
        census = Census("test", name, out_dir, progress)
        counts: list[Counter[str]] = [Counter() for _ in trains]
        path = audit.partitions[name] = out_dir / f"partitions_{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["file", "line", "id", "case", "tss", *(f"partition_{t.name}" for t in trains)])
            for source, line, text, kind, barcode in census.scan(sources):
                labels = ([leak_partition(barcode.case, barcode.tss, t.cases, t.tss) for t in trains]
                          if barcode else [kind] * len(trains))
                for count, label in zip(counts, labels, strict=True):
                    count[label] += 1
                writer.writerow([source.path, line, text, barcode.case if barcode else "",
                                 barcode.tss if barcode else "", *labels])
        audit.tests.append(census)
        for t, count in zip(trains, counts, strict=True):
            audit.matrix.append({"train": t.name, "test": name, **overlap(t.cases, t.tss, census.cases, census.tss),
                                 "n_items": census.n_rows, "n_patient_leaked": count[PATIENT],
                                 "n_site_leaked": count[SITE], "n_clean": count[CLEAN],
                                 "n_unknown": count["unknown"], "n_malformed": count["malformed"]})
    return audit
