"""A site-disjoint split of one inventory: every slide's fold, no tissue source site in two folds (the
leave-site-out cross-validation the leakage audit recommends to benchmark builders)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

from pathbind_analysis.audit.leakage.census import Census, to_stderr
from pathbind_analysis.audit.leakage.inventory import Source, iter_ids
from pathbind_metrics.leakage import site_folds
from pathbind_metrics.tcga import classify

NO_SITE = "no TCGA barcode: its site is unknown, so it is in no fold"


def write_site_split(name: str, sources: list[Source], folds: int, out_dir: Path) -> dict[str, Any]:
    """Write ``out_dir/site_split_<name>.csv`` (file, line, id, case, tss, fold: one row per entry; an entry without
    a TCGA barcode has no fold and says why) and return the folds' sites, cases and slides."""
    census = Census("split", name, out_dir, to_stderr).read(sources)
    slides_per_site = Counter(slide.split("-")[1] for slide in census.slides)
    if not slides_per_site:
        raise ValueError(f"--site-split {name}: no entry holds a TCGA barcode, so no site is known (the ids are listed "
                         f"in {census.listing})")
    fold_of = site_folds(slides_per_site, folds)
    path = out_dir / f"site_split_{name}.csv"
    cases: dict[int, set[str]] = {}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file", "line", "id", "case", "tss", "fold", "reason"])
        for source in sources:
            for line, text in iter_ids(source):
                _, barcode, _ = classify(text)
                if barcode is None:
                    writer.writerow([source.path, line, text, "", "", "", NO_SITE])
                    continue
                fold = fold_of[barcode.tss]
                cases.setdefault(fold, set()).add(barcode.case)
                writer.writerow([source.path, line, text, barcode.case, barcode.tss, fold, ""])
    per_fold = [{"fold": fold, "sites": sorted(site for site, f in fold_of.items() if f == fold),
                 "cases": len(cases.get(fold, ())),
                 "slides": sum(n for site, n in slides_per_site.items() if fold_of[site] == fold)}
                for fold in sorted(set(fold_of.values()))]
    return {"inventory": name, "folds": len(per_fold), "rule": "leave-one-site-out" if folds == 0 else
            f"{folds} site-disjoint folds, balanced by slides", "per_fold": per_fold, "file": str(path),
            "no_site": census.counts["unknown"] + census.counts["malformed"],
            "listing": str(census.listing) if census.listing else None}
