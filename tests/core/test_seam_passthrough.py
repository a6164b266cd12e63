"""Every lmms-eval function the seam patches passes what is not PathBind's through exactly as lmms-eval's own
function does: a foreign task, a foreign model and a ``MagicMock`` give the same result, the same calls on the mock
and the same exception through the installed patch as through the function it wraps.

The cases are keyed by the rows of ``pathbind.lmms.patches.PATCHES``: a patch added to the table without cases
here fails the suite. What a patch adds for PathBind's own (the plugins' index entries) is checked in test_seam.
"""

from __future__ import annotations

import argparse
import importlib
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock, Mock

import pytest

from pathbind.lmms import outcome, patches
from pathbind.lmms.cache import install_cache_hook
from pathbind.lmms.evaluate import install_evaluate_hook
from pathbind.lmms.marks import marked
from pathbind.lmms.tasks import PLUGIN_KEY, install_task_hook
from pathbind.lmms.watch import watch_lmms_eval

FOREIGN_TASK = """
task: foreign_exact
dataset_path: json
dataset_kwargs:
  data_files:
    test: {rows}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.no_images
doc_to_text: "{{{{question}}}}"
doc_to_target: answer
process_results: !function utils.exact
metric_list:
  - metric: exact
    aggregation: mean
    higher_is_better: true
"""
FOREIGN_UTILS = """
def no_images(doc):
    return []


def exact(doc, results):
    return {"exact": float(results[0].strip() == doc["answer"])}
"""


@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    """A user's task folder (what --include_path names), indexed by a TaskManager with the seam installed."""
    watch_lmms_eval()
    assert install_task_hook() and install_evaluate_hook()
    install_cache_hook()
    from lmms_eval.tasks import TaskManager

    folder = tmp_path_factory.mktemp("foreign")
    (folder / "rows.jsonl").write_text('{"question": "Say A", "answer": "A"}\n{"question": "Say B", "answer": "B"}\n')
    (folder / "utils.py").write_text(FOREIGN_UTILS)
    (folder / "task.yaml").write_text(textwrap.dedent(FOREIGN_TASK.format(rows=folder / "rows.jsonl")))
    return folder, TaskManager("ERROR", include_path=str(folder), include_defaults=False)


def foreign_task(foreign: tuple[Path, Any]) -> Any:
    from lmms_eval.tasks import get_task_dict

    return get_task_dict(["foreign_exact"], foreign[1])["foreign_exact"]


def dummy() -> Any:
    """lmms-eval's own model that answers "A" to everything: a foreign model."""
    from lmms_eval.models.simple.dummy import Dummy

    return Dummy()


def requests(task: Any) -> list[Any]:
    task.build_all_requests(limit=None, rank=0, world_size=1)
    return task.instances


def task_manager(foreign: tuple[Path, Any]) -> Any:
    from lmms_eval.tasks import TaskManager

    return TaskManager("ERROR", include_path=str(foreign[0]), include_defaults=False)


def call_result(call: Callable[[], Any]) -> Any:
    """What a call returned or raised, comparable across two runs (mocks by name, functions by qualified name,
    object addresses dropped)."""
    try:
        return ("returned", comparable(call()))
    except Exception as exc:
        return ("raised", type(exc).__name__, without_addresses(str(exc)))


def comparable(value: Any) -> Any:
    if isinstance(value, str):
        return without_addresses(value)
    if isinstance(value, Mock):
        return f"<mock {value._extract_mock_name()}>"
    if isinstance(value, dict):
        return {comparable(key): comparable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [comparable(item) for item in value]
    if callable(value) and hasattr(value, "__qualname__"):
        return f"<function {value.__module__}.{value.__qualname__}>"
    return without_addresses(repr(value)) if type(value).__repr__ is object.__repr__ else value


def without_addresses(text: str) -> str:
    """``text`` without object addresses and run ids (a uuid4's hex)."""
    return re.sub(r"0x[0-9a-f]+|id='\d+'|\b[0-9a-f]{32}\b", "<address>", text)


Case = Callable[[Callable[..., Any], Any, Path], Any]  # (function, the foreign fixture, a fresh folder) -> outcome


def through(call: Callable[[Callable[..., Any], Any, Path], Any]) -> Case:
    """A case on foreign objects: what the call returned or raised."""
    return lambda function, foreign, tmp: call_result(lambda: call(function, foreign, tmp))


def on_mock(call: Callable[[Callable[..., Any], MagicMock, Any, Path], Any]) -> Case:
    """A case on a fresh MagicMock: what the call returned or raised, and every call it made on the mock."""
    def case(function: Callable[..., Any], foreign: Any, tmp: Path) -> Any:
        mock = MagicMock()
        return call_result(lambda: call(function, mock, foreign, tmp)), without_addresses(str(mock.mock_calls))

    return case


def foreign_entries(index: dict) -> dict:
    """An index without the entries the seam adds (each marked with its plugin): lmms-eval's and the user's."""
    return {name: entry for name, entry in index.items() if PLUGIN_KEY not in entry}


def cached(cache: Any, tmp: Path) -> Any:
    """A ResponseCache's state, its folder and run id written the same in every run."""
    state = {key: value for key, value in vars(cache).items() if isinstance(value, str | int | float | dict | None)}
    return {key: str(value).replace(str(tmp), "<tmp>").replace(str(cache._run_id), "<run>")
            for key, value in state.items()}


def a_cache(tmp: Path) -> Any:
    from lmms_eval.caching.response_cache import ResponseCache

    return ResponseCache.create(str(tmp / "cache"), model="dummy")


def cache_class() -> type:
    from lmms_eval.caching.response_cache import ResponseCache

    return ResponseCache


def evaluated(results: Any) -> Any:
    """evaluate's results without what differs from run to run (its clock)."""
    if not isinstance(results, dict):
        return results
    return {key: value for key, value in results.items() if key not in ("total_evaluation_time_seconds", "date")}


def cli_args(foreign: Any, *extra: str) -> argparse.Namespace:
    """The arguments lmms-eval's command line parses for the foreign task and lmms-eval's dummy model."""
    import sys

    from lmms_eval.__main__ import parse_eval_args

    argv = sys.argv
    sys.argv = ["lmms-eval", "--model", "dummy", "--tasks", "foreign_exact", "--include_path", str(foreign[0]),
                "--verbosity", "ERROR", *extra]
    try:
        return parse_eval_args()[1]
    finally:
        sys.argv = argv


CASES: dict[str, list[Case]] = {
    "lmms_eval.tasks:TaskManager.initialize_tasks": [
        through(lambda f, foreign, tmp: foreign_entries(f(task_manager(foreign), include_path=str(foreign[0]),
                                                          include_defaults=False))),
        on_mock(lambda f, mock, foreign, tmp: f(mock, include_path=None, include_defaults=False)),
        on_mock(lambda f, mock, foreign, tmp: f(mock)),
    ],
    "lmms_eval.tasks:TaskManager._get_config": [
        through(lambda f, foreign, tmp: f(foreign[1], "foreign_exact")),
        through(lambda f, foreign, tmp: f(foreign[1], "no_such_task")),
        on_mock(lambda f, mock, foreign, tmp: f(mock, "foreign_exact")),
    ],
    "lmms_eval.api.task:ConfigurableTask.download": [
        through(lambda f, foreign, tmp: (lambda task: (f(task, task.config.dataset_kwargs),
                                                       task.dataset["test"].to_list()))(foreign_task(foreign))),
        on_mock(lambda f, mock, foreign, tmp: f(mock, None)),
    ],
    "lmms_eval.api.task:ConfigurableTask.process_results": [
        through(lambda f, foreign, tmp: f(foreign_task(foreign), {"question": "Say A", "answer": "A"}, [" A "])),
        through(lambda f, foreign, tmp: f(foreign_task(foreign), {"question": "Say A"}, ["A"])),
        on_mock(lambda f, mock, foreign, tmp: f(mock, {"id": "a"}, ["yes"])),
    ],
    "lmms_eval.evaluator:evaluate": [
        through(lambda f, foreign, tmp: evaluated(f(lm=dummy(), task_dict={"foreign_exact": foreign_task(foreign)},
                                                    log_samples=True))),
        on_mock(lambda f, mock, foreign, tmp: evaluated(f(mock, {"foreign_exact": foreign_task(foreign)}))),
        on_mock(lambda f, mock, foreign, tmp: f(dummy(), {"x": mock})),
        on_mock(lambda f, mock, foreign, tmp: f(mock, mock)),
    ],
    "lmms_eval.utils:make_table": [
        through(lambda f, foreign, tmp: f({"results": {"foreign_exact": {"alias": "foreign_exact", "exact,none": 0.5,
                                                                         "exact_stderr,none": "N/A"}},
                                           "n-shot": {"foreign_exact": 0}})),
        through(lambda f, foreign, tmp: f({"results": {}}, "groups")),
        on_mock(lambda f, mock, foreign, tmp: f(mock)),
    ],
    "lmms_eval.__main__:cli_evaluate_single": [
        through(lambda f, foreign, tmp: evaluated(f(cli_args(foreign, "--limit", "2"))[0])),
        through(lambda f, foreign, tmp: f(cli_args(foreign, "--log_samples"))),
        on_mock(lambda f, mock, foreign, tmp: f(mock)),
    ],
    "lmms_eval.caching.response_cache:ResponseCache.create": [
        through(lambda f, foreign, tmp: cached(f(cache_class(), str(tmp / "cache"), model="dummy"), tmp)),
        on_mock(lambda f, mock, foreign, tmp: f(cache_class(), str(tmp / "cache"), model=mock, model_args=mock)),
        on_mock(lambda f, mock, foreign, tmp: f(mock, mock)),
    ],
    "lmms_eval.caching.response_cache:ResponseCache.execute": [
        through(lambda f, foreign, tmp: f(a_cache(tmp), dummy(), "generate_until", requests(foreign_task(foreign)))),
        on_mock(lambda f, mock, foreign, tmp: f(a_cache(tmp), mock, "generate_until", requests(foreign_task(foreign)))),
        on_mock(lambda f, mock, foreign, tmp: f(mock, dummy(), "generate_until", requests(foreign_task(foreign)))),
    ],
    "lmms_eval.caching.response_cache:ResponseCache._is_valid_response": [
        *(through(lambda f, foreign, tmp, response=response, kind=kind: f(response, kind))
          for response, kind in (("A", "generate_until"), ("  ", "generate_until"), (None, "generate_until"),
                                 ((0.5, True), "loglikelihood"), ("[PATHBIND] A", "generate_until"))),
        on_mock(lambda f, mock, foreign, tmp: f(mock, "generate_until")),
    ],
}


def installed(target: str) -> Callable[..., Any]:
    """The function the seam installed for ``module:qualname`` (a classmethod's or staticmethod's function)."""
    module, _, qualname = target.partition(":")
    owner: Any = importlib.import_module(module)
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    if module == "lmms_eval.utils":  # wrapped where the CLI looks it up
        owner = importlib.import_module("lmms_eval.__main__")
    function = vars(owner)[name]
    return getattr(function, "__func__", function)


WRAPPED = [patch.target for patch in patches.PATCHES if patch.wrapped_by]


@pytest.mark.parametrize("target", WRAPPED)
def test_every_patch_has_pass_through_cases(target):
    """A new patch needs its cases here: a foreign task or model and a MagicMock through it."""
    assert CASES.get(target), f"no pass-through cases for the patch of {target}"


@pytest.mark.parametrize("target", WRAPPED)
def test_foreign_tasks_models_and_mocks_pass_through_each_patch_as_through_lmms_eval(target, foreign, tmp_path,
                                                                                    monkeypatch):
    """The installed patch and the lmms-eval function it wraps, on the same fresh foreign objects: the same result,
    the same calls on a mock, the same exception (tenacity's retries do not wait)."""
    import lmms_eval.__main__
    from lmms_eval.api.task import ConfigurableTask
    from lmms_eval.tasks import TaskManager

    outcome.install_outcome_hook()  # what PathBind's lmms_eval command installs
    monkeypatch.setattr(outcome, "FAILED", [])
    monkeypatch.chdir(tmp_path)  # a mock's str() is a relative folder some calls create
    monkeypatch.setattr(lmms_eval.__main__, "TaskManager",  # the same for both: lmms-eval's own tasks not indexed
                        lambda *args, **kwargs: TaskManager(*args, **{**kwargs, "include_defaults": False}))
    for method in ("download", "process_results"):
        monkeypatch.setattr(getattr(ConfigurableTask, method).retry, "sleep", lambda seconds: None)
    patched = installed(target)
    assert marked(patched)
    for number, case in enumerate(CASES[target]):
        ours = case(patched, foreign, tmp_path / f"{number}-patched")
        theirs = case(patched.__wrapped__, foreign, tmp_path / f"{number}-lmms-eval")
        assert ours == theirs, f"case {number}"
