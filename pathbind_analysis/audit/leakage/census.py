"""One streaming pass over an inventory: its distinct TCGA cases and sites, and every entry that is no barcode."""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pathbind_analysis.audit.leakage.inventory import Source, iter_ids
from pathbind_metrics.tcga import Barcode, IdKind, classify

EXAMPLES = 20  # unknown and malformed entries quoted in the report; the listing file has them all
PROGRESS_EVERY = 250_000


def to_stderr(message: str) -> None:
    print(f"pathbind audit-leakage: {message}", file=sys.stderr, flush=True)


@dataclass
class Census:
    """What one named inventory (one or more files) holds: memory grows with its distinct cases, not its rows.

    Entries that are not TCGA barcodes are counted, quoted (the first :data:`EXAMPLES`) and all written to
    ``listing`` (kind, file, line, id, reason) when ``out_dir`` is given.
    """

    role: str  # "train" or "test"
    name: str
    out_dir: Path | None = None
    progress: Callable[[str], None] | None = to_stderr
    files: list[str] = field(default_factory=list)
    cases: set[str] = field(default_factory=set)
    tss: set[str] = field(default_factory=set)
    slides: dict[str, int] = field(default_factory=dict)  # slide (its barcode, however spelled) -> rows naming it
    counts: dict[str, int] = field(default_factory=lambda: {"tcga": 0, "unknown": 0, "malformed": 0})
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"unknown": [], "malformed": []})
    listing: Path | None = None
    _handle: IO[str] | None = None
    _writer: Any = None

    def scan(self, sources: list[Source]) -> Iterator[tuple[Source, int, str, IdKind, Barcode | None]]:
        """``(source, line, id, kind, barcode)`` for every entry of ``sources`` in file order, counted."""
        try:
            for source in sources:
                self.files.append(str(source.path))
                rows = 0
                for rows, (line, text) in enumerate(iter_ids(source), start=1):
                    kind, barcode, reason = classify(text)
                    self.counts[kind] += 1
                    if barcode is not None:
                        self.cases.add(barcode.case)
                        self.tss.add(barcode.tss)
                        slide = barcode.raw.upper()  # case, folders, UUID and suffix do not make another slide
                        self.slides[slide] = self.slides.get(slide, 0) + 1
                    else:
                        self._list(kind, source, line, text, reason)
                    if self.progress and rows % PROGRESS_EVERY == 0:
                        self.progress(f"{self.role} {self.name}: {rows:,} rows read from {source.path}")
                    yield source, line, text, kind, barcode
                if self.progress:
                    self.progress(f"{self.role} {self.name}: {rows:,} rows in {source.path}")
        finally:
            self.close()

    def read(self, sources: list[Source]) -> Census:
        """Scan ``sources`` to the end (a training inventory only needs its sets); returns ``self``."""
        for _ in self.scan(sources):
            pass
        return self

    def close(self) -> None:
        """Close the listing file (scan does it at its end)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    @property
    def n_rows(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> dict[str, Any]:
        """The census as JSON-ready figures, with the quoted unknown and malformed entries."""
        return {"files": self.files, "n_rows": self.n_rows, "n_tcga": self.counts["tcga"],
                "n_cases": len(self.cases), "n_tss": len(self.tss), "n_slides": len(self.slides),
                "slides_by_rows": _histogram(self.slides.values()),
                "repeated_slides_examples": dict(sorted((s, n) for s, n in self.slides.items() if n > 1)[:EXAMPLES]),
                "n_unknown": self.counts["unknown"],
                "n_malformed": self.counts["malformed"], "unknown_examples": self.examples["unknown"],
                "malformed_examples": self.examples["malformed"],
                "listing": str(self.listing) if self.listing else None}

    def lower_bound_note(self) -> str | None:
        """The caveat the report must carry when some entries could not be traced to a TCGA case."""
        unknown, malformed = self.counts["unknown"], self.counts["malformed"]
        if not unknown and not malformed:
            return None
        listed = f" (listed in {self.listing})" if self.listing else ""
        return (f"{self.role} {self.name}: {unknown:,} of {self.n_rows:,} entries without a TCGA barcode (unknown "
                f"provenance), {malformed:,} with a malformed one{listed}. They are left out of rho and the leak "
                "partitions, so the overlap figures are a lower bound: those slides may share patients or sites "
                "that their ids do not show.")

    def _list(self, kind: str, source: Source, line: int, text: str, reason: str) -> None:
        row = {"kind": kind, "file": str(source.path), "line": line, "id": text, "reason": reason}
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(row)
        if self.out_dir is None:
            return
        if self._writer is None:
            self.listing = self.out_dir / f"not_tcga_{self.role}_{self.name}.csv"
            self._handle = self.listing.open("w", newline="", encoding="utf-8")
            self._writer = csv.DictWriter(self._handle, fieldnames=list(row))
            self._writer.writeheader()
        self._writer.writerow(row)


def _histogram(counts: Iterable[int]) -> dict[str, int]:
    """How many slides were named by 1, 2, ... rows: ``{"1": 950, "2": 25}``."""
    found: dict[int, int] = {}
    for count in counts:
        found[count] = found.get(count, 0) + 1
    return {str(rows): n for rows, n in sorted(found.items())}
