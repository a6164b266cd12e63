"""The wheel: everything a user needs ships inside it, and entry points are declared."""

from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import run

ROOT = Path(__file__).parents[2]


def build_wheel(source: Path, out: Path) -> zipfile.ZipFile:
    """``pip wheel`` of the tree at ``source``, as a user's ``pip install .`` builds it."""
    out.mkdir(exist_ok=True)
    done = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
               cwd=out)
    assert done.returncode == 0, done.stderr
    return zipfile.ZipFile(next(out.glob("pathbind-*.whl")))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    return build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


def test_a_module_deleted_since_the_last_build_is_not_in_the_next_wheel(tmp_path):
    """setuptools packs what its build/ folder holds; PathBind's build backend empties it first."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".*", "build", "out", "*.egg-info", "__pycache__",
                                                             "tests", "benchmarks", "examples", "docs"))
    stale = tree / "pathbind" / "zz_deleted.py"
    stale.write_text("DELETED = True\n")
    assert "pathbind/zz_deleted.py" in build_wheel(tree, tmp_path / "first").namelist()
    assert (tree / "build" / "lib" / "pathbind" / "zz_deleted.py").is_file()  # what a plain setuptools would pack
    stale.unlink()
    assert "pathbind/zz_deleted.py" not in build_wheel(tree, tmp_path / "second").namelist()


def test_wheel_ships_task_yamls_templates_and_demo_data(wheel):
    """YAMLs, Jinja templates and the demo parquet files are package data."""
    names = set(wheel.namelist())
    for expected in ("pathbind_tasks/demo/pathbind_demo.yaml", "pathbind_tasks/common/_vqa.yaml",
                     "pathbind_tasks/templates/mcq.jinja", "pathbind_tasks/templates/yesno.jinja",
                     "pathbind_tasks/demo/data/vqa.parquet", "pathbind_tasks/demo/data/yesno.parquet",
                     "pathbind/lmms/tasks.py", "pathbind_models/controls/vision.py", "pathbind_metrics/parsing.py",
                     "pathbind_analysis/report/builder.py", "pathbind_models/hf/families/qwen2_vl.py"):
        assert expected in names, expected
    assert not any(name.startswith(("tests/", "examples/", "benchmarks/", "build_backend/")) for name in names)


def test_wheel_declares_plugins_models_tasks_and_scripts(wheel):
    """First-party plugins use the public ``pathbind`` group; lmms-eval groups and both scripts are declared."""
    entry_points = next(wheel.read(n).decode() for n in wheel.namelist() if n.endswith("entry_points.txt"))
    for line in ("pathbind_tasks = pathbind_tasks.plugin", "pathbind_models = pathbind_models.plugin",
                 "pathbind_analysis = pathbind_analysis.plugin",
                 "pathbind = pathbind.lmms.watch:lmms_eval_models",
                 "lmms_eval = pathbind.lmms.cli:main", "pathbind = pathbind.cli:console"):
        assert line in entry_points, line


def test_the_demo_data_stays_small(wheel):
    """The committed demo set is at most 5 MB."""
    assert sum(i.file_size for i in wheel.infolist() if i.filename.endswith(".parquet")) <= 5_000_000
