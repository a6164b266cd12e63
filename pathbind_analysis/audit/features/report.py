"""The feature audit's human-readable outputs: the summary rows (stdout and Markdown) and the Markdown report."""

from __future__ import annotations

from typing import Any

from pathbind_analysis.audit.features.similarity import GROUPS
from pathbind_analysis.audit.features.slides import DROP_REASONS


def summary_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measure: value, 95% interval, what it was computed on."""
    tss, reid, similarity = report["tss"], report["reid"], report["similarity"]["groups"]
    interval = "refused (see below)" if "interval_undefined" in tss else _interval(tss["auroc_macro_ci95"])
    if "interval_note" in tss:
        interval += " wide (see below)"
    if "auroc_permutation_p" in tss:  # beside the interval: the test of the same AUROC against chance
        interval += f"; permutation p = {_p(tss['auroc_permutation_p'])}"
    rows = [{"measure": "TSS detection, macro AUROC", "value": tss["auroc_macro"], "ci95": interval,
             "on": tss.get("undefined") or f"{tss['n_sites']} sites, {tss['n_test']} test slides"},
            {"measure": "patient re-id, top-1", "value": reid["top1"], "ci95": _interval(reid["top1_ci95"]),
             "on": reid.get("undefined") or f"{reid['multiple_of_chance']:.1f}× chance ({reid['chance']:.4f}), "
                                            f"{reid['n_patients']} patients, {reid['n_test']} test slides"}]
    for name, label in GROUPS.items():
        group = similarity[name]
        excess = "" if name == "cross_tss" else f", {group['excess_over_cross_tss']:+.3f} vs cross-site"
        rows.append({"measure": f"cosine, {label}", "value": group["mean"], "ci95": _interval(group["mean_ci95"]),
                     "on": f"{group['pairs_used']:,} pairs{excess}"})
    return rows


def markdown(report: dict[str, Any]) -> str:
    rows, counts = summary_rows(report), report["rows"]
    control = " — **labels permuted (control)**" if report["permuted_labels"] else ""
    lines = [f"# Feature-space leakage audit: {report['encoder']}{control}", "",
             f"{report['input']['path']} ({report['input']['format']}), {report['input']['dimension']}-dimensional "
             f"embeddings; seed {report['seed']}, {report['n_resamples']:,} bootstrap resamples.", "",
             "| measure | value | 95% CI | on |", "| --- | ---: | --- | --- |"]
    lines += [f"| {r['measure']} | {_number(r['value'])} | {r['ci95']} | {r['on']} |" for r in rows]
    p_values, permuted = report["similarity"]["permutation_p"], report["similarity"]["permuted"]
    lines += ["", "One-sided permutation tests: " + "; ".join(f"{test} p = {_p(p)} ({permuted[test]})"
                                                          for test, p in p_values.items()) + ".",
              "", f"TSS detection splits {report['tss']['split']}.",
              "", "## Input rows", "", f"{counts['read']:,} read, {counts['used']:,} used.", ""]
    if counts["dropped"]:
        lines += ["| dropped | rows | why | e.g. |", "| --- | ---: | --- | --- |"]
        lines += [f"| {reason} | {count:,} | {DROP_REASONS[reason]} | {', '.join(counts['dropped_examples'][reason])} |"
                  for reason, count in counts["dropped"].items()]
    tss, reid = report["tss"], report["reid"]
    lines += [f"\nTSS interval refused: {tss['interval_undefined']}." if "interval_undefined" in tss else ""]
    lines += [f"\nTSS interval {tss['interval_note']}." if "interval_note" in tss else ""]
    if "auroc_permutation_p" in tss:
        lines += ["", "TSS permutation p: one-sided, the probe fixed, the held-out patients' sites permuted among them "
                      f"({report['n_resamples']:,} permutations)."]
    lines += ["", f"TSS detection left out {tss['dropped_sites']:,} site(s) with fewer than {tss['min_slides']} "
                  f"slides ({tss['dropped_slides']:,} slides); re-identification left out "
                  f"{reid['dropped_single_slide_patients']:,} patient(s) with a single slide."]
    return "\n".join(lines) + "\n"


def _interval(bounds: list[float]) -> str:
    return f"[{_number(bounds[0])}, {_number(bounds[1])}]"


def _number(value: float | None) -> str:
    return "n/a" if value is None or value != value else f"{value:.3f}"


def _p(value: float) -> str:
    return "n/a" if value != value else f"{value:.2g}"
