"""Shared fixtures: a fresh plugin manager, runners for the installed command-line tools, and the end-to-end runs
that several test files read, made once per test session."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from pathbind import make_plugin_manager
from pathbind.lmms.running import RunningTask, running

BIN = Path(sys.executable).parent
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def pytest_configure(config: pytest.Config) -> None:
    """One BLAS/OpenMP/torch thread in each pytest-xdist worker and in the tools it starts, so that the workers (one
    per core) do not fight over the cores; set before the test modules import numpy or torch, which read it once."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many tests skipped for want of the real tokenizer/processor files, and how to get them."""
    from realtok import MISSING, skip_reason

    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and MISSING in str(r.longrepr[2])]
    if skipped:
        terminalreporter.write_sep("-", "real tokenizer files", yellow=True)
        terminalreporter.write_line(f"{len(skipped)} tests skipped: {skip_reason()} "
                                    "(or set PATHBIND_REALTOK to a folder holding them)")


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium driven by selenium (tests/browser.py); fails, saying why, when `make browser` has not
    installed it."""
    from browser import chromium

    with chromium() as driver:
        yield driver


@pytest.fixture
def running_task():
    """A running task, as the seam sets one around a task's functions: ``.ledger`` is its last process_docs's."""
    with running(RunningTask("test_task")) as task:
        yield task


@pytest.fixture
def logged_warnings():
    """The warning lines PathBind logs while the test runs (through loguru, as lmms-eval does)."""
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(message.record["message"]), level="WARNING")
    yield lines
    logger.remove(sink)


@pytest.fixture
def pm():
    """A plugin manager built from the installed entry points."""
    return make_plugin_manager()


@pytest.fixture(scope="session")
def task_manager():
    """lmms-eval's TaskManager built the way its CLI builds it, after the seam ran."""
    from lmms_eval.models import MODEL_REGISTRY_V2  # noqa: F401 - importing runs the model entry points
    from lmms_eval.tasks import TaskManager

    return TaskManager("ERROR")


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: int = 600) -> subprocess.CompletedProcess:
    """Run an installed tool away from the source tree, offline, capturing its output."""
    full_env = {**os.environ, **OFFLINE, **(env or {})}
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


# Models that the tests load with random weights: they never emit an end token, so an uncapped run generates to the
# task's budget (1,024 tokens for VQA). The cap belongs to the test's arguments, never to the product's defaults.
RANDOM_WEIGHT_MODELS = {"pathbind_hf", "llava_hf", "qwen2_5_vl"}


def lmms_eval(tmp_path: Path, model: str, tasks: str, *extra: str, launcher: list[str] | None = None,
              env: dict[str, str] | None = None, exit_code: int = 0) -> dict[str, Any]:
    """Run an evaluation and return its results.json. PathBind's ``lmms_eval`` exits 1 when the evaluation failed,
    but the other launchers (``python -m lmms_eval``, ``torchrun -m lmms_eval``) exit 0 whatever happened, so the
    file is the proof; ``exit_code`` 1 for a run that writes results yet failed (every task skipped)."""
    if model in RANDOM_WEIGHT_MODELS and not any("max_new_tokens=" in argument for argument in extra):
        raise ValueError(f"{model} has random weights in the tests: cap generation with max_new_tokens in "
                         "--model_args or --gen_kwargs")
    out = tmp_path / f"out-{model}-{len(list(tmp_path.iterdir()))}"
    command = [*(launcher or [str(BIN / "lmms_eval")]), "--model", model, "--tasks", tasks,
               "--output_path", str(out), "--log_samples", *extra]
    done = run(command, cwd=tmp_path, env=env)
    files = sorted(out.rglob("*_results.json"))
    assert done.returncode == exit_code and files, \
        f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return {"results": json.loads(files[0].read_text()), "out": out, "stdout": done.stdout, "stderr": done.stderr}


def _session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder that every pytest-xdist worker of this test session shares (its per-worker temp folders' parent)."""
    base = tmp_path_factory.getbasetemp()
    # A worker's folder is <session>/popen-gw<N>; a pytest that a test starts inherits PYTEST_XDIST_WORKER but not
    # that folder, and must not share another session's runs.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") and base.name.startswith("popen-gw") else base


@pytest.fixture(scope="session")
def shared_lmms_eval(tmp_path_factory):
    """Factory ``shared_lmms_eval(model, tasks, *extra, launcher=None, env=None)``: ``lmms_eval``'s result for that
    argument set, run once per test session. Under pytest-xdist the first worker to ask runs it and the others wait
    for it and read its files; a failed run fails every test that asks for it, with the run's output. Tests only
    read its output folder."""
    root = _session_root(tmp_path_factory) / "shared_runs"
    root.mkdir(exist_ok=True)

    def get(model: str, tasks: str, *extra: str, launcher: list[str] | None = None,
            env: dict[str, str] | None = None) -> dict[str, Any]:
        key = hashlib.sha256(json.dumps([model, tasks, extra, launcher, env]).encode()).hexdigest()[:16]
        folder, saved, failed = root / f"{model}-{key}", root / f"{model}-{key}.json", root / f"{model}-{key}.failed"
        with FileLock(f"{folder}.lock"):
            if not saved.exists() and not failed.exists():
                folder.mkdir()
                try:
                    result = lmms_eval(folder, model, tasks, *extra, launcher=launcher, env=env)
                except AssertionError as error:
                    failed.write_text(str(error))
                    raise
                saved.write_text(json.dumps({**result, "out": str(result["out"])}))
        if failed.exists():
            pytest.fail(f"shared run of {model} on {tasks} failed:\n{failed.read_text()}")
        result = json.loads(saved.read_text())
        return {**result, "out": Path(result["out"])}

    return get


@pytest.fixture(scope="session")
def demo_control(shared_lmms_eval):
    """The positive control on the whole ``pathbind_demo`` group, with sample logs."""
    return shared_lmms_eval("pathbind_control", "pathbind_demo")


@pytest.fixture(scope="session")
def demo_blind(shared_lmms_eval):
    """The negative control on the whole ``pathbind_demo`` group, started as ``python -m lmms_eval``."""
    return shared_lmms_eval("pathbind_blind", "pathbind_demo", launcher=[sys.executable, "-m", "lmms_eval"])


@pytest.fixture(scope="session")
def limited_control(shared_lmms_eval):
    """The positive control on the demo VQA, yes/no and ablation tasks with ``--limit 4``."""
    return shared_lmms_eval("pathbind_control", "pathbind_demo_vqa,pathbind_demo_yesno,pathbind_demo_vqa_ablation",
                            "--limit", "4")


@pytest.fixture(scope="session")
def limited_blind(shared_lmms_eval):
    """The negative control with ``--limit 8`` on the demo VQA and ablation tasks (8 documents: 4 whole items, and
    one item under all 8 ablation conditions), a PathView task and the grounding task (one document per item)."""
    return shared_lmms_eval("pathbind_blind", "pathbind_demo_vqa,pathbind_demo_vqa_ablation,"
                            "pathbind_pathview_demo_region_ocl,pathbind_demo_grounding", "--limit", "8")


def data_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``pathbind data check ARGS`` in this process: exit status and stdout."""
    from pathbind.cli import main

    code = main(["data", "check", *args])
    return code, capsys.readouterr().out


def metric(results: dict[str, Any], task: str, name: str) -> float:
    return results["results"]["results"][task][f"{name},none"]


def write_plugin(root: Path, name: str, module_source: str, files: dict[str, str] | None = None) -> Path:
    """Write an importable plugin module plus a dist-info declaring it in the ``pathbind`` entry-point group.

    Put ``root`` on ``sys.path`` (or PYTHONPATH) and importlib.metadata finds it like an installed package.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.py").write_text(textwrap.dedent(module_source))
    dist = root / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[pathbind]\n{name} = {name}\n")
    for relative, content in (files or {}).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(textwrap.dedent(content))
    return root


def _built_once(root: Path, make: Callable[[str, Path], Path]) -> Callable[[str], Path]:
    """``make(name, root / name)``, called once per name."""
    built: dict[str, Path] = {}

    def build(name: str) -> Path:
        if name not in built:
            built[name] = make(name, root / name)
        return built[name]

    return build


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """Factory ``tiny_model(family) -> Path``: a tiny random model of that family (seed 0), built once per session."""
    from pathbind_models.hf.tiny_checkpoints import make_tiny_model

    return _built_once(tmp_path_factory.mktemp("tiny_models"), make_tiny_model)


@pytest.fixture(scope="session")
def realtok_model(tmp_path_factory):
    """Factory ``realtok_model(name) -> Path``: a tiny random model carrying ``name``'s real tokenizer, processor and
    chat template (``tests/realtok.py``), built once per session."""
    from realtok import available, make_realtok_model, skip_reason

    if not available():
        pytest.skip(skip_reason())
    return _built_once(tmp_path_factory.mktemp("realtok_models"), make_realtok_model)
