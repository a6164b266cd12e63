"""Row accounting: every row a task reads is evaluated or dropped with a named reason, 1 or N processes alike."""

from __future__ import annotations

import io

import datasets
import pytest
from conftest import metric
from PIL import Image

from pathbind.lmms.running import RunningTask, running
from pathbind_tasks.common import accounting
from pathbind_tasks.common.accounting import NOT_EVALUATED, UNACCOUNTED, close, counting, drop
from pathbind_tasks.common.conditions import WITH_AND_WITHOUT_IMAGE, with_conditions


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), (10, 20, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def _rows(n: int) -> datasets.Dataset:
    return datasets.Dataset.from_dict(
        {"id": [f"q{i}" for i in range(n)], "image": [{"bytes": _png(), "path": None}] * n,
         "question": ["Which?"] * n, "options": [["a", "b"]] * n, "answer": ["A"] * n,
         "dimension": ["D1"] * n, "source": ["s"] * n},
        features=datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                                    "question": datasets.Value("string"),
                                    "options": datasets.List(datasets.Value("string")),
                                    "answer": datasets.Value("string"), "dimension": datasets.Value("string"),
                                    "source": datasets.Value("string")}))


def _built(process_docs, rows: datasets.Dataset) -> tuple[datasets.Dataset, RunningTask]:
    """``process_docs(rows)`` as the seam runs it: with its task, which keeps the ledger."""
    task = RunningTask("demo")
    with running(task):
        return process_docs(rows), task


def _ledger(task: RunningTask) -> dict:
    ledger = task.ledger
    assert ledger is not None
    encoded = {"rows": ledger.rows, "kept": ledger.kept, "dropped": dict(ledger.dropped)}
    return {**encoded, "selection": sorted(ledger.selection)} if ledger.selection else encoded


def _accounting(task: RunningTask, docs: datasets.Dataset, ids: set[str] | None = None) -> dict:
    """The aggregation as the seam runs it, over one record per document (only the ids it reads)."""
    with running(task):
        return accounting.accounting([{"id": i} for i in docs["id"] if ids is None or i in ids])


def _dropping_odd_rows(dataset: datasets.Dataset) -> datasets.Dataset:
    kept = dataset.select(range(0, len(dataset), 2))
    drop("odd row", len(dataset) - len(kept))
    return kept


def test_rows_dropped_by_a_conversion_are_counted_with_their_reason():
    docs, task = _built(with_conditions(WITH_AND_WITHOUT_IMAGE, _dropping_odd_rows), _rows(7))
    assert _ledger(task) == {"rows": 7, "kept": 4, "dropped": {"odd row": 3}}
    assert len(docs) == 8 and "accounting" not in docs.column_names  # 4 items x 2 conditions; the ledger stays out
    assert _accounting(task, docs) == {"rows": 7, "evaluated": 4, "dropped": {"odd row": 3}}


def test_a_row_lost_without_a_reason_is_counted_as_unaccounted():
    docs, task = _built(with_conditions(WITH_AND_WITHOUT_IMAGE, lambda d: d.select(range(len(d) - 2))), _rows(5))
    assert _ledger(task)["dropped"] == {UNACCOUNTED: 2}
    result = _accounting(task, docs)
    assert result["rows"] == result["evaluated"] + sum(result["dropped"].values()) == 5


def test_items_kept_but_not_evaluated_are_dropped_as_such():
    docs, task = _built(with_conditions(WITH_AND_WITHOUT_IMAGE), _rows(6))
    assert _accounting(task, docs, {"q0", "q3"}) == {"rows": 6, "evaluated": 2, "dropped": {NOT_EVALUATED: 4}}


def test_each_build_of_a_task_keeps_its_own_ledger():
    """lmms-eval may build a task again (another TaskManager): the ledger is the last build's, not a sum."""
    process_docs, task = with_conditions(WITH_AND_WITHOUT_IMAGE, _dropping_odd_rows), RunningTask("demo")
    with running(task):
        process_docs(_rows(7))
        process_docs(_rows(3))
    assert _ledger(task) == {"rows": 3, "kept": 2, "dropped": {"odd row": 1}}


def test_a_nested_process_docs_shares_the_outer_ledger():
    """A filter that calls a shared process_docs (one split of a two-split file) keeps counting the whole file."""
    inner = with_conditions(WITH_AND_WITHOUT_IMAGE)

    def one_split(rows: datasets.Dataset) -> datasets.Dataset:
        with counting(rows):
            drop("other split", 3)
            return inner(rows.select([0, 1]))

    _, task = _built(one_split, _rows(5))
    assert _ledger(task) == {"rows": 5, "kept": 2, "dropped": {"other split": 3}}


def test_a_drop_by_the_tasks_definition_is_marked():
    """``selection=True`` marks the reason in the ledger (what `pathbind data check` passes); others stay faults."""
    def selecting(rows: datasets.Dataset) -> datasets.Dataset:
        with counting(rows) as ledger:
            drop("other split", 2, selection=True)
            drop("no split", 1)
            return close(ledger, rows.select([0]))

    _, task = _built(selecting, _rows(4))
    assert _ledger(task) == {"rows": 4, "kept": 1, "dropped": {"other split": 2, "no split": 1},
                             "selection": ["other split"]}


def test_an_aggregation_outside_a_task_reports_no_row_count():
    assert accounting.accounting([{"id": "a"}, {"id": "b"}])["rows"] is None


def test_drop_outside_a_task_does_nothing():
    drop("no ledger open")  # a converter called directly, as unit tests do


@pytest.mark.slow
def test_every_task_reports_its_rows_through_lmms_eval(limited_blind):
    """The accounting metric sits beside the others, counted before --limit, and names the task that cut rows."""
    result = limited_blind
    rows = {"pathbind_demo_vqa": 60, "pathbind_demo_vqa_ablation": 60, "pathbind_pathview_demo_region_ocl": 8,
            "pathbind_demo_grounding": 24}
    evaluated = {"pathbind_demo_vqa": 4, "pathbind_demo_vqa_ablation": 1, "pathbind_pathview_demo_region_ocl": 8,
                 "pathbind_demo_grounding": 8}
    for task, n in rows.items():
        figures = metric(result, task, "accounting")
        assert figures["rows"] == n and figures["evaluated"] == evaluated[task], (task, figures)
        assert figures["rows"] == figures["evaluated"] + sum(figures["dropped"].values())
        assert set(figures["dropped"]) <= {NOT_EVALUATED}
    log = result["stdout"] + result["stderr"]  # loguru writes to either, as lmms-eval configures it
    assert "task pathbind_pathview_demo_region_ocl: " not in log  # nothing cut, nothing to warn about
    assert "task pathbind_demo_vqa: 56 of 60 rows were not evaluated" in log
