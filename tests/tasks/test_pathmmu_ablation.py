"""PathMMU test-tiny under the paper's image ablations (Table A.3, Figure A.1), from data.json as published, run
beside another task and drawn by `pathbind report`."""

from __future__ import annotations

import json

import pytest
from conftest import BIN, lmms_eval, metric, run
from source_data import pathmmu_item, png

from pathbind.lmms_output import sample_record, task_samples

TASK = "pathbind_pathmmu_test_tiny_ablation"
SUBSETS = ("PubMed", "Atlas", "EduContent")


@pytest.mark.slow
def test_test_tiny_ablations_swap_within_and_across_subsets_and_mix_with_other_tasks(tmp_path):
    """Two test-tiny items in each of three subsets (and a test item, not evaluated): every item is asked under
    its image, a blank one, an image of its own subset and of another, and four blur levels; the blind control's
    answers never move; the report writes Table A.3 and Figure A.1 for the task beside the demo's yes/no table."""
    folder = tmp_path / "data" / "pathmmu"
    (folder / "images").mkdir(parents=True)
    data = {subset: {"test_tiny": [pathmmu_item(10 * s + k) for k in range(2)], "test": [pathmmu_item(90 + s)]}
            for s, subset in enumerate(SUBSETS)}
    for number in [10 * s + k for s in range(3) for k in range(2)] + [90, 91, 92]:
        (folder / "images" / f"img_{number}.jpg").write_bytes(png(number * 2))
    (folder / "data.json").write_text(json.dumps(data))

    result = lmms_eval(tmp_path, "pathbind_blind", f"{TASK},pathbind_demo_yesno", "--limit", "48",
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert metric(result, TASK, "accounting") == {"rows": 6, "evaluated": 6, "dropped": {}}
    assert metric(result, "pathbind_demo_yesno", "acc_image") == metric(result, "pathbind_demo_yesno", "acc_text")
    for condition in ("blank", "swap_same", "swap_cross", "blur_2", "blur_4", "blur_8", "blur_16"):
        assert metric(result, TASK, f"drop_{condition}") == 0
    records = [sample_record(sample) for sample in task_samples(result["out"], TASK)]
    assert len(records) == 6 * 8
    subset = {r["id"]: r["source"] for r in records}
    for record in records:
        shown = subset[record["image_from"]]
        assert record["source"] == f"PathMMU/{record['id'].split('-')[0]}"
        expected = {"swap_same": shown == record["source"], "swap_cross": shown != record["source"]}
        assert expected.get(record["condition"], record["image_from"] == record["id"])

    out = tmp_path / "report"
    done = run([str(BIN / "pathbind"), "report", str(result["out"]), "--out", str(out)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    markdown = (out / "report.md").read_text()
    accuracy = f"{metric(result, TASK, 'acc_image'):.1f}"
    assert f"**Table A.3 form: {TASK}, accuracy (%) with the image replaced**" in markdown
    assert f"| pathbind_blind | {accuracy} | {accuracy} | {accuracy} | {accuracy} |" in markdown
    assert f"| pathbind_blind | {' | '.join([accuracy] * 5)} |" in markdown  # Figure A.1: the original and 4 levels
    assert (out / "figures" / f"blur_{TASK}.png").is_file()
    assert "**pathbind_demo_yesno (Table 2 form)**" in markdown
