"""Shared fixtures: a fresh plugin manager and runners for the installed command-line tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pathbind import make_plugin_manager

BIN = Path(sys.executable).parent
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


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
    """lmms-eval's TaskManager built the way its CLI builds it, after the bridge ran."""
    from lmms_eval.models import MODEL_REGISTRY_V2  # noqa: F401 - importing runs the model entry points
    from lmms_eval.tasks import TaskManager

    return TaskManager("ERROR")


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: int = 600) -> subprocess.CompletedProcess:
    """Run an installed tool away from the source tree, offline, capturing its output."""
    full_env = {**os.environ, **OFFLINE, **(env or {})}
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


def lmms_eval(tmp_path: Path, model: str, tasks: str, *extra: str, launcher: list[str] | None = None,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run an evaluation and return its results.json; lmms-eval exits 0 on failure, so the file is the proof."""
    out = tmp_path / f"out-{model}-{len(list(tmp_path.iterdir()))}"
    command = [*(launcher or [str(BIN / "lmms_eval")]), "--model", model, "--tasks", tasks,
               "--output_path", str(out), "--log_samples", *extra]
    done = run(command, cwd=tmp_path, env=env)
    files = sorted(out.rglob("*_results.json"))
    assert done.returncode == 0 and files, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return {"results": json.loads(files[0].read_text()), "out": out, "stdout": done.stdout, "stderr": done.stderr}


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
    from pathbind_models.hf.testing import make_tiny_model

    return _built_once(tmp_path_factory.mktemp("tiny_models"), make_tiny_model)


@pytest.fixture(scope="session")
def realtok_model(tmp_path_factory):
    """Factory ``realtok_model(name) -> Path``: a tiny random model carrying ``name``'s real tokenizer, processor and
    chat template (``tests/realtok.py``), built once per session."""
    from realtok import available, make_realtok_model

    if not available():
        pytest.skip("the real checkpoint files (../shared/realtok) are not beside this checkout")
    return _built_once(tmp_path_factory.mktemp("realtok_models"), make_realtok_model)
