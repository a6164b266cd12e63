"""Settings lmms-eval would stop on in its own words, refused in PathBind's before any model call: a misspelled task
(with the close names, before lmms-eval builds its task manager), --limit 0, --num_fewshot on zero-shot tasks."""

from __future__ import annotations

import sys

import pytest
from conftest import BIN, run

TASK = "pathbind_demo_vqa"


def lmms_eval_stops(tmp_path, *arguments: str, launcher: list[str] | None = None):
    """An lmms_eval run that is to stop before evaluating: its exit code and output (no results file is written)."""
    done = run([*(launcher or [str(BIN / "lmms_eval")]), "--model", "pathbind_blind", *arguments,
                "--output_path", str(tmp_path / "out")], cwd=tmp_path)
    assert not list((tmp_path / "out").rglob("*_results.json")), done.stdout[-2000:]
    return done


def test_a_misspelled_task_is_refused_with_the_close_names_before_lmms_eval_starts(tmp_path):
    """PathBind's and lmms-eval's close names, for each unknown name; nothing of lmms-eval's evaluation ran (no
    line of its log: the task manager and the model were never built)."""
    done = lmms_eval_stops(tmp_path, "--tasks", f"{TASK},pathbind_demo_vqq,mmmu_vall,no_such_thing_at_all")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "lmms_eval: error: no task, group or tag is named 'pathbind_demo_vqq': did you mean PathBind "
        "pathbind_demo_vqa, pathbind_demo, pathbind_demo_vqa_think, pathbind_demo_vqa_image, pathbind_demo_yesno?; "
        "no task, group or tag is named 'mmmu_vall': did you mean lmms-eval mmmu_val, cmmmu_val, mmvu_val, mmmu_a, "
        "mmr_v_all?; no task, group or tag is named 'no_such_thing_at_all', and none has a close name (`pathbind "
        "tasks` lists PathBind's tasks and groups, `lmms-eval tasks list` every task)"]


@pytest.mark.slow
def test_python_m_lmms_eval_keeps_lmms_evals_own_error(tmp_path):
    """lmms-eval's own launcher is lmms-eval's alone: its error stands, and PathBind adds nothing to it."""
    done = lmms_eval_stops(tmp_path, "--tasks", "pathbind_demo_vqq", launcher=[sys.executable, "-m", "lmms_eval"])
    assert "Tasks not found: pathbind_demo_vqq" in done.stdout + done.stderr
    assert "did you mean" not in done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("arguments", "words"), [
    (("--limit", "0"), "SettingError: --limit 0 selects no document of any task: give --limit N (N documents of each "
                       "task, or a fraction of them between 0 and 1), or leave --limit out"),
    (("--num_fewshot", "1", "--limit", "2"),
     f"SettingError: --num_fewshot: task(s) {TASK} have no few-shot examples to show (their YAML declares no "
     "fewshot_config; PathBind's tasks ask every question zero-shot, as the protocol does): leave --num_fewshot out"),
])
def test_a_setting_no_task_can_honour_is_refused_in_words(tmp_path, arguments, words):
    """Not `build_requests() did not find any docs!` or `'ConfigurableTask' object has no attribute 'sampler'`."""
    done = lmms_eval_stops(tmp_path, "--tasks", TASK, *arguments)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(f"lmms_eval: error: {words}")
    assert "sampler" not in done.stdout + done.stderr and "did not find any docs" not in done.stdout + done.stderr
