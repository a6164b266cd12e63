"""Slides from an embeddings table: the id, site, case and vector columns chosen, every row used or dropped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from pathbind_analysis.audit.features.read import FeatureInputError, Table
from pathbind_metrics.tcga import classify, slide_key, within

# Why an input row is not a slide of the audit, in the order the checks run (a row counts under its first).
DROP_REASONS = {
    "missing_id": "empty id",
    "repeated_slide": "a slide read in an earlier row, under the same id or another spelling of it (case, folders, "
                      "file suffix, UUID); the first row is kept, so one slide never counts twice",
    "not_tcga_barcode": "id holds no TCGA barcode, and --site-column/--case-column do not give its labels",
    "malformed_tcga_barcode": "id starts like a TCGA barcode whose fields do not parse",
    "missing_site": "empty --site-column value",
    "missing_case": "empty --case-column value",
    "missing_vector": "no embedding",
    "non_finite_vector": "embedding holds NaN or infinity",
    "zero_vector": "all-zero embedding (a failed extraction; its cosine similarity is undefined)",
    "wrong_dimension": "embedding length differs from the most common one",
    "ambiguous_slide": "id is a shortened barcode (e.g. the case) of another row's slide: perhaps the same slide, "
                       "so neither is counted as two",
}
EXAMPLES = 5  # ids listed per drop reason


@dataclass
class Slides:
    """The audited slides (rows of ``vectors``, float64 N×D, sorted by id) with their tissue source site and case
    labels."""

    ids: list[str]
    sites: np.ndarray
    cases: np.ndarray
    vectors: np.ndarray
    id_column: str
    vector_column: str
    rows_read: int
    dropped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    rows_of: dict[str, list[str]] = field(default_factory=dict)  # slide -> the ids of its rows, when several

    def drop(self, reason: str, example: str) -> None:
        """Count a row dropped for ``reason`` (a key of DROP_REASONS), quoting the first few."""
        self.dropped[reason] += 1
        examples = self.examples.setdefault(reason, [])
        if len(examples) < EXAMPLES:
            examples.append(example)

    def row_summary(self) -> dict[str, object]:
        """Rows read, used and dropped (with examples), and how many rows mapped to each slide: a histogram, and
        every slide of more than one row with the spellings of its rows."""
        per_slide = Counter({1: len(self.ids) - len(self.rows_of)}) + Counter(len(r) for r in self.rows_of.values())
        return {"read": self.rows_read, "used": len(self.ids), "dropped": dict(self.dropped),
                "dropped_examples": self.examples,
                "slides_by_rows": {str(rows): count for rows, count in sorted(per_slide.items()) if count},
                "repeated_slides": {key: {"rows": len(spellings), "ids": sorted(set(spellings))}
                                    for key, spellings in sorted(self.rows_of.items())}}


def choose_slides(table: Table, id_column: str | None = None, vector_column: str | None = None,
                  site_column: str | None = None, case_column: str | None = None) -> Slides:
    """The table's slides; FeatureInputError for a missing or ambiguous column, or columns of unequal length."""
    for option, name in (("--site-column", site_column), ("--case-column", case_column)):
        if name is not None:
            _known(table, name, option, table.labels)
    ids_name = _id_column(table, id_column, {site_column, case_column})
    vectors_name = _vector_column(table, vector_column)
    ids = table.labels[ids_name]
    for name in (vectors_name, site_column, case_column):
        if name is not None:
            length = len(table.vectors[name] if name == vectors_name else table.labels[name])
            if length != len(ids):
                raise FeatureInputError(f"{table.path.name}: {name!r} has {length:,} rows, the id column "
                                        f"{ids_name!r} {len(ids):,}")
    return _validated(table, ids_name, vectors_name, site_column, case_column)


def _known(table: Table, name: str, option: str, columns: Mapping[str, object]) -> None:
    if name not in columns:
        raise FeatureInputError(f"{option} {name!r}: {table.path.name} has no such column; its "
                                f"{'vector' if option == '--vector-column' else 'label'} columns are "
                                f"{_names(columns)}")


def _id_column(table: Table, chosen: str | None, label_columns: set[str | None]) -> str:
    """The named id column, else the one column (besides the site and case columns) mostly of TCGA barcodes, else
    (with site and case columns given) the one remaining label column."""
    if chosen is not None:
        _known(table, chosen, "--id-column", table.labels)
        return chosen
    barcodes = [name for name, values in table.labels.items()
                if name not in label_columns and _mostly_barcodes(values)]
    if len(barcodes) == 1:
        return barcodes[0]
    if len(barcodes) > 1:
        raise FeatureInputError(f"{table.path.name}: several columns hold TCGA barcodes ({_names(barcodes)}); "
                                "name the slide id column with --id-column")
    others = [name for name in table.labels if name not in label_columns]
    if None not in label_columns and len(others) == 1:  # both labels come from columns: any id will do
        return others[0]
    if None not in label_columns:
        raise FeatureInputError(f"{table.path.name}: name the slide id column with --id-column (candidates: "
                                f"{_names(others)})")
    raise FeatureInputError(f"{table.path.name}: no column holds TCGA barcodes (label columns: "
                            f"{_names(table.labels)}); name the id column with --id-column and give the site and "
                            "case labels with --site-column and --case-column")


def _vector_column(table: Table, chosen: str | None) -> str:
    if chosen is not None:
        prefixed = [name for name in table.vectors if name.startswith(chosen) and ".." in name]
        if chosen not in table.vectors and len(prefixed) == 1:  # the prefix of per-dimension columns
            return prefixed[0]
        _known(table, chosen, "--vector-column", table.vectors)
        return chosen
    if len(table.vectors) == 1:
        return next(iter(table.vectors))
    if not table.vectors:
        ignored = "; ".join(f"{name}: {why}" for name, why in table.ignored.items())
        raise FeatureInputError(f"{table.path.name}: no embedding column (a numeric list column, an N×D array, or "
                                f"numeric columns named by dimension)" + (f"; not used: {ignored}" if ignored else ""))
    raise FeatureInputError(f"{table.path.name}: several embedding columns ({_names(table.vectors)}); choose one "
                            "with --vector-column")


def _validated(table: Table, ids_name: str, vectors_name: str, site_column: str | None,
               case_column: str | None) -> Slides:
    ids, vectors = table.labels[ids_name], table.vectors[vectors_name]
    no_labels: list[str | None] = [None] * len(ids)  # None: the label comes from the barcode
    sites = [_label(v) for v in table.labels[site_column]] if site_column else no_labels
    cases = [_label(v) for v in table.labels[case_column]] if case_column else no_labels
    lengths = Counter(len(v) for v in vectors if v is not None)
    dimension = max(lengths, key=lengths.__getitem__) if lengths else 0  # ties: the first seen
    slides = Slides([], np.array([]), np.array([]), np.zeros((0, dimension)), ids_name, vectors_name, len(ids))
    kept: dict[str, tuple[str, str, np.ndarray]] = {}  # slide key -> (site, case, vector) of its first usable row
    spellings: dict[str, list[str]] = {}
    for row, (slide_id, site, case, vector) in enumerate(zip(ids, sites, cases, vectors, strict=True)):
        key = slide_key(slide_id) if slide_id else ""
        checked = _check(slide_id, key in kept, site, case, vector, dimension)
        if key:
            spellings.setdefault(key, []).append(slide_id)  # type: ignore[arg-type]
        if isinstance(checked, str):
            slides.drop(checked, slide_id or f"row {row}")
        else:
            kept[key] = (*checked, vector)  # type: ignore[assignment]
    for key in _ambiguous(kept):
        slides.drop("ambiguous_slide", spellings[key][0])
        del kept[key]
    slides.rows_of = {key: spellings[key] for key in kept if len(spellings[key]) > 1}
    if kept:
        order = sorted(kept)  # splits and samples follow the slides, not the file's row order or spelling
        slides.ids = order
        slides.sites = np.array([kept[k][0] for k in order])
        slides.cases = np.array([kept[k][1] for k in order])
        slides.vectors = np.stack([kept[k][2] for k in order])
    return slides


def unit_scaled(vectors: np.ndarray) -> np.ndarray:
    """The vectors divided by their largest absolute value: one positive factor leaves cosines and standardised
    probes as they are, and keeps embeddings stored at 1e200 or 1e-200 from overflowing or underflowing when
    squared (scikit-learn would read NaN, or scale nothing)."""
    return vectors / np.abs(vectors).max()


def _ambiguous(kept: Mapping[str, object]) -> list[str]:
    """Slide keys that are a shortened barcode of another kept slide ("TCGA-BH-A0BS" beside
    "TCGA-BH-A0BS-01Z-00-DX1"): sorted, each is a prefix of the next key of its kind."""
    keys = sorted(kept)
    return [short for short, long in pairwise(keys) if within(short, long)]


def _label(value: str | None) -> str:
    """A site or patient label as counted: spaces trimmed, upper case ("bh " and "BH" are one site)."""
    return " ".join((value or "").split()).upper()


def _check(slide_id: str | None, seen: bool, site: str | None, case: str | None, vector: np.ndarray | None,
           dimension: int) -> tuple[str, str] | str:
    """A usable row's (site, case), else the first check it fails (see DROP_REASONS). ``site``/``case`` None:
    taken from the id's TCGA barcode; "": an empty label column value."""
    if not slide_id:
        return "missing_id"
    if seen:
        return "repeated_slide"
    if site is None or case is None:
        kind, barcode, _ = classify(slide_id)
        if barcode is None:
            return "not_tcga_barcode" if kind == "unknown" else "malformed_tcga_barcode"
        site, case = barcode.tss if site is None else site, barcode.case if case is None else case
    if not site:
        return "missing_site"
    if not case:
        return "missing_case"
    if vector is None:
        return "missing_vector"
    if not np.isfinite(vector).all():
        return "non_finite_vector"
    if not vector.any():
        return "zero_vector"
    if len(vector) != dimension:
        return "wrong_dimension"
    return site, case


def _mostly_barcodes(values: list[str | None]) -> bool:
    present = [v for v in values if v]
    return bool(present) and 2 * sum(classify(v)[0] == "tcga" for v in present) > len(present)


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names) or "none"
