"""``pathbind pairs``: clustered paired changes of a tuned model over its general model, with Holm-adjusted tests,
and refusals of runs that cannot be paired."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import BIN, run

from pathbind.provenance import fingerprint
from pathbind_analysis.pairs import adjust
from pathbind_metrics import resampling as RS
from pathbind_metrics.pairs import paired_delta, ranking_agreement

VQA = "pathbind_demo_vqa"


def planted_runs(seed: int, delta_mg: float, n_images: int = 40, per_image: int = 5) -> tuple[np.ndarray, list]:
    """Per-item ΔMG differences of two simulated models on questions that share images: the image decides how
    hard its questions are for both (correlated within an image), the tuned model gains ``delta_mg`` with the
    image."""
    rng = np.random.default_rng(seed)
    ease = np.repeat(rng.normal(0, 1.5, n_images), per_image)
    keys = np.repeat(np.arange(n_images), per_image).tolist()

    def answers(gain: float) -> tuple[np.ndarray, np.ndarray]:
        image = rng.random(ease.size) < 1 / (1 + np.exp(-(ease + 0.5 + gain)))
        text = rng.random(ease.size) < 1 / (1 + np.exp(-(ease - 0.5)))
        return image.astype(float), text.astype(float)

    (gi, gt), (ti, tt) = answers(0.0), answers(delta_mg)
    return (ti - tt) - (gi - gt), keys


def test_a_planted_change_in_gain_is_detected_and_none_is_not_over_seeds():
    """Over 100 seeds: a planted ΔMG (about 25 points) is found nearly always; without one, the test's rejections
    stay at its 5% level; and the interval resamples the 40 images, not the 200 questions."""
    found = [paired_delta(*planted_runs(seed, 1.5), cluster="image", scale=100, bound=2, n_permutations=400,
                          seed=seed)["p"] <= 0.05 for seed in range(100)]
    false = [paired_delta(*planted_runs(seed, 0.0), cluster="image", scale=100, bound=2, n_permutations=400,
                          seed=seed)["p"] <= 0.05 for seed in range(100)]
    assert np.mean(found) >= 0.9 and np.mean(false) <= 0.05 + 0.03  # binomial SE at 100 seeds: 0.022
    result = paired_delta(*planted_runs(0, 1.5), cluster="image", scale=100, bound=2)
    assert result["ci95"]["clusters"] == 40 and result["ci95"]["items"] == result["n"] == 200
    assert result["ci95"]["low"] <= result["delta"] <= result["ci95"]["high"] and result["ci95"]["design_effect"] > 1
    assert result["ci95"]["method"] == ("hull of the inverted cluster sign-flip test and the interval of the mean "
                                        "(cluster jackknife SE × t(df))") and result["ci95"]["warning"] == ""
    alike = paired_delta([0.0] * 60, np.repeat(np.arange(10), 6).tolist(), cluster="image", scale=100, bound=2)
    assert alike["ci95"]["low"] < 0 < alike["ci95"]["high"] and "MOVER" in alike["ci95"]["method"]  # no point


def test_interval_and_p_value_agree_and_few_clusters_say_no_test_can_reject():
    """Under the null on 8 images of unequal size the interval excludes 0 exactly when p <= 0.05 (a percentile
    bootstrap excluded it in 16-22% of such data sets); all five images improving by 100 points gives p = 2/2^5,
    no bounds, and says why."""
    rng = np.random.default_rng(8)
    for seed in range(40):
        sizes = rng.integers(1, 9, 8)
        keys = np.repeat(np.arange(8), sizes).tolist()
        diff = (rng.random(len(keys)) < 0.5 + seed / 100).astype(float) - (rng.random(len(keys)) < 0.5)
        for bound in (1.0, None):  # ΔAcc's difference interval, or the jackknife's of any mean
            result = paired_delta(diff, keys, cluster="image", scale=100, bound=bound, seed=seed)
            assert (result["p"] <= 0.05) == (not result["ci95"]["low"] <= 0 <= result["ci95"]["high"])
    five = paired_delta([1.0] * 5, list("abcde"), cluster="image", scale=100)
    assert five["delta"] == 100 and five["p"] == 2 / 2**5 and math.isnan(five["ci95"]["low"])
    assert "no test can reach p <= 0.05 with 5 image clusters (the smallest two-sided sign-flip p is 2/2^5" \
        in five["ci95"]["warning"]


def test_a_change_of_ten_points_on_six_unequal_images_is_covered():
    """ΔAcc of +10 on 6 images of lognormal size (0/1 answers, the tuned model right where the general one is on
    most items): the sign-flip inversion alone is the range of the images' mean changes, which misses below the
    truth whenever every image changes by less; joined with the difference interval it holds its level (binomial SE
    at 150 data sets: 0.018; benchmarks/coverage.py measures 6 and 8 images at 400)."""
    rng = np.random.default_rng(9)
    joined, alone = [], []
    for seed in range(150):
        sizes = np.maximum(1, np.round(np.exp(rng.normal(np.log(4), 1.0, 6)))).astype(int)
        keys = np.repeat(np.arange(6), sizes).tolist()
        general = np.repeat(rng.beta(0.6 * (1 / 0.3 - 1), 0.4 * (1 / 0.3 - 1), 6), sizes)
        shared = rng.random(general.size)
        own = np.where(rng.random(general.size) < 0.7, shared, rng.random(general.size))
        diff = (own < general + 0.25 * (1 - general)).astype(float) - (shared < general)
        result = paired_delta(diff, keys, cluster="image", bound=1.0, seed=seed)["ci95"]
        joined.append(result["low"] <= 0.1 <= result["high"])
        low, high = RS.SignFlips(diff, keys).interval()
        alone.append(low <= 0.1 <= high)
    assert np.mean(joined) >= 0.92 and np.mean(alone) < np.mean(joined)


def test_holm_spans_every_pair_of_an_invocation():
    """Four pairs of two measures each: eight tests, one family, named."""
    rows = [{"general": f"g{i}", "tuned": f"t{i}", "p": p} for i in range(4) for p in (0.01, 0.2)]
    family = adjust(rows, "this invocation")
    assert [row["p_holm"] for row in rows[:2]] == pytest.approx([0.08, 0.8])
    assert family == "the 8 tests of this invocation (4 pairs × their tasks and measures)"


def test_nan_differences_are_left_out_and_ranking_agreement():
    same = paired_delta([0.0, 0.0, math.nan], ["a", "b", "c"], cluster="image")
    assert same["delta"] == 0.0 and same["n"] == 2 and same["ci95"]["items"] == 2 and same["p"] == 1.0
    tau = ranking_agreement({"iou": [0.1, 0.2, 0.3], "same": [1, 2, 3], "reversed": [3, 2, 1], "one": [1, 2, math.nan]},
                            "iou")
    assert tau["same"] == 1.0 and tau["reversed"] == -1.0 and tau["one"] == 1.0


def test_pairs_command_rejects_a_malformed_pair(tmp_path):
    done = run([str(BIN / "pathbind"), "pairs", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 1 and "GENERAL:TUNED" in done.stderr


def edited_run(run_dir: Path, copy: Path, edit, pattern: str = "*_results.json") -> Path:
    """A copy of a run folder whose files matching ``pattern`` have ``edit(text)`` applied."""
    shutil.copytree(run_dir, copy)
    for file in copy.rglob(pattern):
        file.write_text(edit(file.read_text()))
    return copy


def one_row_fewer(text: str) -> str:
    """results.json as a run on the same file with one row fewer would write it."""
    results = json.loads(text)
    record = results["pathbind"]["data"]["pathbind_demo_vqa"]
    record["rows"]["test"] -= 1
    record["fingerprint"] = fingerprint(record)
    return json.dumps(results)


def without_data_record(text: str) -> str:
    results = json.loads(text)
    results["pathbind"].pop("data")
    return json.dumps(results)


def strict_json(text: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.slow
def test_pairs_compares_clustered_and_refuses_what_cannot_be_paired(demo_control, demo_blind, tmp_path):
    """The blind control against the positive control: ΔMG is negative with an interval below 0 and a Holm-adjusted
    p under 0.05; --json is strict. Refused, each in one line: runs on different data, runs that evaluated
    different items, a grounding task given as the VQA task, an empty sample log. A run with no data record is
    compared, with a warning."""
    control, blind = demo_control["out"], demo_blind["out"]

    def pairs(general: Path, tuned: Path, *extra: str):
        return run([str(BIN / "pathbind"), "pairs", f"{general}:{tuned}", "--vqa-task", "pathbind_demo_vqa",
                    "--vqa-task", "pathbind_demo_yesno", "--grounding-task", "pathbind_demo_grounding",
                    "--n-permutations", "400", *extra], cwd=tmp_path)

    done = pairs(control, blind, "--json")
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr[-2000:]
    output = strict_json(done.stdout)
    rows = {(row["task"], row["measure"]): row for row in output["pairs"]}
    assert output["holm_family"].endswith("tests of this invocation (1 pair × their tasks and measures)")
    assert set(rows) == {(task, measure) for task in ("pathbind_demo_vqa", "pathbind_demo_yesno")
                         for measure in ("ΔAcc", "ΔMG")} | {("pathbind_demo_grounding", m) for m in ("ΔIoU", "ΔRecall")}
    mg = rows[("pathbind_demo_vqa", "ΔMG")]
    assert mg["delta"] < -30 and mg["ci95"]["high"] < 0 and mg["p_holm"] < 0.05 and mg["p_holm"] >= mg["p"]
    assert mg["ci95"]["cluster"] == "image" and mg["ci95"]["clusters"] == mg["n"] == 60
    assert rows[("pathbind_demo_grounding", "ΔIoU")]["n"] == 0  # the blind control localises nothing: NaN IoU
    assert rows[("pathbind_demo_grounding", "ΔIoU")]["delta"] is None

    fewer = edited_run(blind, tmp_path / "fewer", one_row_fewer)
    refused = pairs(control, fewer)
    assert refused.returncode == 1 and refused.stderr.splitlines() == [
        f"pathbind pairs: error: task pathbind_demo_vqa: {control} and {fewer} ran on different data "
        "(rows test: 60 vs 59); rerun both on the same data"]

    def drop_first_sample(text: str) -> str:
        return "\n".join(text.splitlines()[2:]) + "\n"  # item 1's image and text answers

    cut = edited_run(blind, tmp_path / "cut", drop_first_sample, "*_samples_pathbind_demo_vqa.jsonl")
    refused = pairs(control, cut)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1
    assert f"task pathbind_demo_vqa: {control} and {cut} evaluated different items (60 vs 59: 1 only in {control}" \
        in refused.stderr

    wrong = run([str(BIN / "pathbind"), "pairs", f"{control}:{blind}", "--vqa-task", "pathbind_demo_grounding"],
                cwd=tmp_path)
    assert wrong.returncode == 1 and len(wrong.stderr.splitlines()) == 1, wrong.stderr
    assert "hold no PathBind VQA record (with 'correct'" in wrong.stderr and "Traceback" not in wrong.stderr

    nothing = run([str(BIN / "pathbind"), "pairs", f"{blind}:{blind}", "--grounding-task", "pathbind_demo_grounding"],
                  cwd=tmp_path)  # the blind control's IoU is undefined on every item
    assert nothing.returncode == 1 and nothing.stderr.splitlines() == [
        "pathbind pairs: error: nothing to compare: no item has a value of any measure under both models of any pair"]

    older = edited_run(blind, tmp_path / "older", without_data_record)
    warned = pairs(control, older)
    assert warned.returncode == 0 and "ΔMG" in warned.stdout and "P (HOLM)" in warned.stdout
    assert f"pathbind pairs: warning: {older} has no record of the data task pathbind_demo_vqa read" in warned.stderr

    empty = edited_run(blind, tmp_path / "empty", lambda text: "", "*_samples_pathbind_demo_vqa.jsonl")
    refused = pairs(control, empty)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "_samples_pathbind_demo_vqa.jsonl: the sample log of task 'pathbind_demo_vqa' is empty" in refused.stderr


def edited_json(key_path: tuple[str, ...], value) -> Callable[[str], str]:
    """An edit setting one entry of results.json (``("versions", "pathbind_demo_vqa")``) to ``value``."""
    def edit(text: str) -> str:
        results = json.loads(text)
        *parents, last = key_path
        target = results
        for key in parents:
            target = target[key]
        target[last] = value
        return json.dumps(results)

    return edit


@pytest.mark.slow
def test_pairs_never_chooses_silently(demo_control, demo_blind, shared_lmms_eval, tmp_path):
    """Another version of the task is refused naming both; other releases and a folder with two runs of the task
    are warned about, naming what was taken and how to take another (a results file, which is accepted); the task
    a run lacks is named with what it ran and the option; a --predict_only run is named as one."""
    control, blind = demo_control["out"], demo_blind["out"]

    def pairs(general: Path, tuned: Path, tasks: tuple[str, ...] = ("--vqa-task", VQA)):
        return run([str(BIN / "pathbind"), "pairs", f"{general}:{tuned}", *tasks, "--n-permutations", "200"],
                   cwd=tmp_path)

    bumped = edited_run(blind, tmp_path / "bumped", edited_json(("versions", VQA), 2))
    refused = pairs(control, bumped)
    assert refused.returncode == 1 and refused.stderr.splitlines() == [
        f"pathbind pairs: error: task {VQA}: {control} ran version 1 of it and {bumped} version 2 (its YAML's "
        "metadata.version: another version asks or scores otherwise); rerun both with one release of the task"]

    release = edited_run(blind, tmp_path / "release", edited_json(("pathbind", "software", "lmms-eval"), "0.7.2"))
    warned = pairs(control, release)
    assert warned.returncode == 0 and warned.stderr.splitlines() == [
        f"pathbind pairs: warning: {control} ran lmms-eval 0.7.3, pathbind 0.1.0 and {release} lmms-eval 0.7.2, "
        f"pathbind 0.1.0: the prompts and scoring of task {VQA} may differ between them"]

    twice = edited_run(blind, tmp_path / "twice", lambda text: text)
    latest = next(twice.rglob("*_results.json"))
    older = latest.with_name("20000101_000000_results.json")
    shutil.copy(latest, older)
    warned = pairs(control, twice)
    assert warned.returncode == 0 and warned.stderr.splitlines() == [
        f"pathbind pairs: warning: {twice}: 2 results files hold task {VQA}: using {latest} (the latest, by the date "
        f"lmms-eval puts in its name) over {older}; give a results file instead of its folder to use another"]
    chosen = pairs(control, latest)
    assert chosen.returncode == 0 and chosen.stderr == "" and f"twice/{latest.name}" in chosen.stdout
    no_log = pairs(control, older)
    assert no_log.returncode == 1 and no_log.stderr.splitlines() == [
        f"pathbind pairs: error: {older}: no sample log of task '{VQA}' beside it (run lmms_eval with --log_samples "
        f"and --tasks {VQA})"]

    default = pairs(control, blind, tasks=())  # neither task option: pathbind_vqa, which these runs did not run
    assert default.returncode == 1 and len(default.stderr.splitlines()) == 1
    assert default.stderr.startswith(f"pathbind pairs: error: {control}: no run of task 'pathbind_vqa' (its runs "
                                     f"evaluated pathbind_demo_faithfulness, pathbind_demo_grounding, ")
    assert default.stderr.rstrip().endswith("); choose the task with --vqa-task")

    predicted = shared_lmms_eval("pathbind_blind", VQA, "--limit", "4", "--predict_only")["out"]
    refused = pairs(control, predicted)
    assert refused.returncode == 1 and refused.stderr.splitlines() == [
        f"pathbind pairs: error: {next(predicted.rglob('*_results.json'))}: a --predict_only run: lmms-eval logged "
        f"the answers of task {VQA} and scored none; rerun it without --predict_only to compare it"]
