"""The two-stage text-only consensus filter over models' logged answers: item decisions and report figures."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from pathbind_analysis.curation.logs import ModelAnswers
from pathbind_metrics.consensus import consensus_filter, correct_count_distribution, text_solvable
from pathbind_metrics.vqa import accuracy

AVERAGE = "Avg."  # unweighted mean over sources, as in the paper's Tables B.5 and B.6


@dataclass(frozen=True)
class Stage:
    """The models of one filtering stage and how many of them answering correctly drops an item."""

    models: list[ModelAnswers]
    drop_at: int


def filter_items(stage1: Stage, stage2: Stage) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Decide every item the stage-1 logs hold; return one row per item and the report.

    An item some model of a stage it reaches has no answer for is excluded (never kept) with a reason;
    stage-2 logs may omit the items stage 1 drops, as when the stage-2 models were only asked the rest.
    """
    items = list(dict.fromkeys(item for model in stage1.models for item in model.correct))
    sources: dict[str, str] = {}
    for model in [*stage1.models, *stage2.models]:
        for item, source in model.sources.items():
            sources.setdefault(item, source)  # the first log (stage 1, argument order) that holds the item
    lacking1 = {item: _lacking(stage1, item) for item in items}
    judged = [item for item in items if not lacking1[item]]
    first, second = _matrix(stage1, judged), _matrix(stage2, judged)
    survives = ~text_solvable(first, at_least=stage1.drop_at)
    answered2 = np.array([not _lacking(stage2, item) for item in judged], dtype=bool)
    kept = consensus_filter(first, second, k=stage2.drop_at, k_stage1=stage1.drop_at) & answered2

    rows = [_row(item, sources[item], None, None, "excluded_stage1",
                 f"no stage-1 answer from {', '.join(lacking1[item])}") for item in items if lacking1[item]]
    n1, n2 = first.sum(axis=1), second.sum(axis=1)
    for i, item in enumerate(judged):
        if not survives[i]:
            decision, reason = "dropped_stage1", f"{n1[i]} of {first.shape[1]} stage-1 models correct"
        elif not answered2[i]:
            decision, reason = "excluded_stage2", f"no stage-2 answer from {', '.join(_lacking(stage2, item))}"
        else:
            decision = "kept" if kept[i] else "dropped_stage2"
            reason = f"{n2[i]} of {second.shape[1]} stage-2 models correct"
        rows.append(_row(item, sources[item], int(n1[i]), int(n2[i]) if survives[i] and answered2[i] else None,
                         decision, reason))
    order = {item: i for i, item in enumerate(items)}
    rows.sort(key=lambda row: order[row["id"]])

    at_stage2 = survives & answered2
    stage1_sources = [sources[item] for item in judged]
    known = set(items)
    ignored = sorted({item for model in stage2.models for item in model.correct} - known)
    counts = _counts(rows)
    report = {
        "condition": stage1.models[0].condition,
        "stages": {name: {"models": [m.name for m in stage.models], "drop_if_correct_by_at_least": stage.drop_at}
                   for name, stage in (("stage1", stage1), ("stage2", stage2))},
        "flow": f"{counts['items']:,} → {counts['after_stage1']:,} → {counts['kept']:,}",
        "counts": counts,
        "counts_by_source": {source: _counts([r for r in rows if r["source"] == source])
                             for source in sorted(set(sources[item] for item in items))},
        "models": [_model_summary(model, stage) for stage, model in
                   [*(("stage1", m) for m in stage1.models), *(("stage2", m) for m in stage2.models)]],
        "accuracy": {"stage1": _accuracy(first, stage1, stage1_sources),
                     "stage2": _accuracy(second[at_stage2], stage2, _pick(stage1_sources, at_stage2))},
        "distribution": {"stage1": _distribution(first, stage1_sources),
                         "stage2": _distribution(second[at_stage2], _pick(stage1_sources, at_stage2))},
        "excluded": [{"id": r["id"], "source": r["source"], "stage": int(r["decision"][-1]), "reason": r["reason"]}
                     for r in rows if r["decision"].startswith("excluded")],
        "ignored": {"count": len(ignored), "ids": ignored,
                    "reason": "answered in a stage-2 log but held by no stage-1 log"},
    }
    return rows, report


def _lacking(stage: Stage, item: str) -> list[str]:
    return [model.name for model in stage.models if item not in model.correct]


def _matrix(stage: Stage, items: list[str]) -> np.ndarray:
    # Missing answers read as False; callers only use rows of items every model of the stage answered.
    values = [[model.correct.get(item, False) for model in stage.models] for item in items]
    return np.array(values, dtype=bool).reshape(len(items), len(stage.models))


def _row(item: str, source: str, stage1_correct: int | None, stage2_correct: int | None, decision: str,
         reason: str) -> dict[str, Any]:
    return {"id": item, "source": source, "stage1_correct": stage1_correct, "stage2_correct": stage2_correct,
            "decision": decision, "reason": reason}


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    n = Counter(row["decision"] for row in rows)
    return {"items": len(rows), "excluded_stage1": n["excluded_stage1"], "dropped_stage1": n["dropped_stage1"],
            "after_stage1": n["excluded_stage2"] + n["dropped_stage2"] + n["kept"],
            "excluded_stage2": n["excluded_stage2"], "dropped_stage2": n["dropped_stage2"], "kept": n["kept"]}


def _model_summary(model: ModelAnswers, stage: str) -> dict[str, Any]:
    return {"name": model.name, "stage": stage, "files": [str(f) for f in model.files], "answers": len(model.correct),
            "correct": sum(model.correct.values()), "invalid": model.invalid,
            "other_conditions": dict(sorted(model.other_conditions.items())), "skipped_files": model.skipped_files}


def _pick(values: list[str], mask: np.ndarray) -> list[str]:
    return [value for value, keep in zip(values, mask, strict=True) if keep]


def _by_source(item_sources: list[str]) -> dict[str, np.ndarray]:
    labels = np.array(item_sources, dtype=object)
    return {source: labels == source for source in sorted(set(item_sources))}


def _accuracy(correct: np.ndarray, stage: Stage, item_sources: list[str]) -> dict[str, dict[str, float | None]]:
    table, masks = {}, _by_source(item_sources)
    for j, model in enumerate(stage.models):
        row = {source: accuracy(correct[mask, j]) for source, mask in masks.items()}
        table[model.name] = {**{s: _number(v) for s, v in row.items()}, AVERAGE: _mean(list(row.values())),
                             "All": _number(accuracy(correct[:, j]))}
    return table


def _distribution(correct: np.ndarray, item_sources: list[str]) -> dict[str, Any]:
    masks = _by_source(item_sources)
    percents = {source: correct_count_distribution(correct[mask], percent=True) for source, mask in masks.items()}
    by_source = {source: {"items": int(mask.sum()), "counts": correct_count_distribution(correct[mask]).tolist(),
                          "percent": [_number(p) for p in percents[source]]} for source, mask in masks.items()}
    return {"n_models": correct.shape[1], "by_source": by_source,
            AVERAGE: [_mean([p[j] for p in percents.values()]) for j in range(correct.shape[1] + 1)],
            "All": {"items": correct.shape[0], "counts": correct_count_distribution(correct).tolist(),
                    "percent": [_number(p) for p in correct_count_distribution(correct, percent=True)]}}


def _mean(values: list[float]) -> float | None:
    present = [v for v in values if not np.isnan(v)]
    return _number(float(np.mean(present))) if present else None


def _number(value: float) -> float | None:
    # JSON has no NaN: an undefined figure (no items) is null.
    return None if np.isnan(value) else round(float(value), 2)
