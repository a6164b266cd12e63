"""`pathbind view` on demo runs of the two controls, opened from the file system in headless Chromium
(tests/browser.py): every item, the filters, two models side by side, the reviewer's CSV read back by `pathbind view
--reviews`, and the heat map drawn over the expert box."""

from __future__ import annotations

import base64
import io
import json
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from conftest import BIN, run
from PIL import Image

from pathbind.lmms_output import read_sample_log, sample_record

MODELS = ("pathbind_control", "pathbind_blind")
COUNT = "return document.getElementById('count').textContent"
CARDS = "return [...document.querySelectorAll('.item')].map(c => [c.dataset.task, c.dataset.id])"


@pytest.fixture(scope="module")
def site(demo_control, demo_blind, tmp_path_factory):
    """The site of both controls on the whole demo, written by the installed command; and the items each run
    logged, read from the sample logs here: task -> id -> run -> condition -> record."""
    out = tmp_path_factory.mktemp("view") / "site"
    folders = {"pathbind_control": demo_control["out"], "pathbind_blind": demo_blind["out"]}
    done = run([str(BIN / "pathbind"), "view", *map(str, folders.values()), "--out", str(out)], cwd=out.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    logged: dict[str, dict[str, dict[str, dict[str, dict]]]] = {}
    for name, folder in folders.items():
        for log in Path(folder).rglob("*_samples_*.jsonl"):
            for _, sample in read_sample_log(log):
                record = sample_record(sample)
                logged.setdefault(record.get("task") or log.stem.split("_samples_")[1], {}).setdefault(
                    str(record["id"]), {}).setdefault(name, {})[record.get("condition", "image")] = record
    assert f"{sum(map(len, logged.values()))} item(s) of 2 run(s)" in done.stdout
    return out, logged


def _open(browser, out: Path) -> None:
    browser.set_window_size(1280, 1200)
    browser.get((out / "index.html").as_uri())
    browser.execute_script("localStorage.clear()")
    browser.refresh()


def _choose(browser, select: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", select)).select_by_value(value)


def _all_cards(browser) -> list[list[str]]:
    """Every card the filters leave, over all pages."""
    cards = []
    while True:
        cards += browser.execute_script(CARDS)
        page = browser.execute_script("return document.getElementById('page').textContent").split()  # page 1 of 3
        if page[1] == page[-1]:
            return cards
        browser.find_element("id", "next").click()


@pytest.mark.slow
def test_every_item_is_shown_and_the_filters_select_from_the_logs(browser, site):
    """All items of both runs; the task, outcome and cluster filters leave exactly the items the sample logs say."""
    out, logged = site
    _open(browser, out)
    total = sum(map(len, logged.values()))
    assert browser.execute_script(COUNT) == f"{total} of {total} items"
    assert sorted(map(tuple, _all_cards(browser))) == sorted((t, i) for t, ids in logged.items() for i in ids)
    _choose(browser, "task", "pathbind_demo_vqa")
    vqa = logged["pathbind_demo_vqa"]
    assert browser.execute_script(COUNT) == f"{len(vqa)} of {total} items"
    _choose(browser, "outcome", "right_without_image")
    right = {i for i, runs in vqa.items() if any(r.get("text", {}).get("correct") is True for r in runs.values())}
    assert 0 < len(right) < len(vqa)
    assert {i for _, i in _all_cards(browser)} == right
    _choose(browser, "outcome", "image_only")
    only = {i for i, runs in vqa.items() if any(r["image"]["correct"] and r["text"]["correct"] is False
                                                for r in runs.values())}
    assert {i for _, i in _all_cards(browser)} == only and only - right
    _choose(browser, "outcome", "")
    records = next(iter(vqa.values()))
    cluster = records["pathbind_control"]["image"]["cluster"]
    browser.find_element("id", "cluster").send_keys(cluster)
    assert {i for _, i in _all_cards(browser)} == {i for i, r in vqa.items()
                                                     if r["pathbind_control"]["image"]["cluster"] == cluster}


@pytest.mark.slow
def test_two_models_side_by_side_with_each_conditions_answer(browser, site):
    """Each card holds one panel per chosen model with that model's answer under each condition, its invalid
    reason where it has one; "beside: nothing" leaves one panel."""
    out, logged = site
    _open(browser, out)
    _choose(browser, "task", "pathbind_demo_vqa_ablation")
    _choose(browser, "run-a", "pathbind_control")
    _choose(browser, "run-b", "pathbind_blind")
    panels = browser.execute_script(
        "return [...document.querySelectorAll('.item')].map(c => [c.dataset.id, [...c.querySelectorAll('.panel')]"
        ".map(p => [p.dataset.run, [...p.querySelectorAll('tr[data-condition]')].map(r => [r.dataset.condition, "
        "r.lastChild.textContent])])])")
    assert panels
    for item, shown in panels:
        assert [model for model, _ in shown] == list(MODELS)
        for model, rows in shown:
            records = logged["pathbind_demo_vqa_ablation"][item][model]
            assert dict(rows) == {condition: _scored(record) for condition, record in records.items()}
    assert any("invalid: " in text for _, shown in panels for _, rows in shown for _, text in rows)
    _choose(browser, "run-b", "")
    assert set(browser.execute_script(
        "return [...document.querySelectorAll('.item')].map(c => c.querySelectorAll('.panel').length)")) == {1}


def _scored(record: dict) -> str:
    if record["valid"] is False:
        return f"invalid: {record['reason']}"
    return "right" if record["correct"] else "wrong"


@pytest.mark.slow
def test_reviews_persist_and_their_csv_round_trips(browser, site, tmp_path):
    """Verdicts and notes survive a reload (kept in the browser), the exported CSV holds them, text with commas
    and quotes intact, and `pathbind view --reviews` reads it back; a bad verdict is refused naming
    its line."""
    out, _ = site
    _open(browser, out)
    cards = browser.find_elements("css selector", ".item")[:2]
    cards[0].find_element("css selector", "input[value=agree]").click()
    cards[1].find_element("css selector", "input[value=disagree]").click()
    note = 'box too small, "half" the gland; see slide 3'
    browser.execute_script("const n = arguments[0]; n.value = arguments[1]; n.dispatchEvent(new Event('input'))",
                           cards[1].find_element("css selector", "input.note"), note)
    browser.refresh()
    cards = browser.find_elements("css selector", ".item")[:2]
    assert cards[0].find_element("css selector", "input[value=agree]").is_selected()
    browser.find_element("id", "export").click()
    href = browser.find_element("id", "download").get_attribute("href")
    csv = urllib.parse.unquote(href.split(",", 1)[1])
    (tmp_path / "reviews.csv").write_text(csv, encoding="utf-8", newline="")
    done = run([str(BIN / "pathbind"), "view", "--reviews", str(tmp_path / "reviews.csv"), "--json"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ids = [(card.get_attribute("data-task"), card.get_attribute("data-id")) for card in cards]
    rows = {(row["task"], row["id"]): row for row in json.loads(done.stdout)}
    assert set(rows) == set(ids)
    assert rows[ids[0]]["verdict"] == "agree" and rows[ids[1]]["verdict"] == "disagree"
    assert rows[ids[1]]["note"] == note and rows[ids[1]]["runs"] == " | ".join(MODELS)
    table = run([str(BIN / "pathbind"), "view", "--reviews", str(tmp_path / "reviews.csv")], cwd=tmp_path)
    assert table.returncode == 0 and f"{ids[1][0]} {ids[1][1]} (disagree; " in table.stdout
    (tmp_path / "bad.csv").write_text(csv.replace("agree", "maybe", 1), encoding="utf-8")
    bad = run([str(BIN / "pathbind"), "view", "--reviews", str(tmp_path / "bad.csv")], cwd=tmp_path)
    assert bad.returncode == 1 and f"bad.csv:2: verdict 'maybe' of {ids[0][0]} {ids[0][1]}" in bad.stderr


@pytest.mark.slow
def test_the_heat_map_is_drawn_over_the_expert_box(browser, site):
    """A screenshot of the positive control's first grounding item: the expert box is drawn where the data puts
    it, and the heat map (jet: red hot, blue cold) is hotter inside it than outside; the blind control has no map
    and says why."""
    out, _ = site
    _open(browser, out)
    _choose(browser, "task", "pathbind_demo_grounding")
    card = browser.find_elements("css selector", ".item")[0]
    panel = card.find_element("css selector", ".panel[data-run=pathbind_control] .pic")
    assert panel.find_elements("css selector", "img.overlay")
    shot = Image.open(io.BytesIO(base64.b64decode(panel.screenshot_as_base64))).convert("RGB")
    box = card.find_element("css selector", ".panel[data-run=pathbind_control] .box.expert")
    x0, y0 = box.location["x"] - panel.location["x"], box.location["y"] - panel.location["y"]
    x1, y1 = x0 + box.size["width"], y0 + box.size["height"]
    pixels = np.asarray(shot, dtype=float)
    scale = pixels.shape[1] / panel.size["width"]  # the screenshot's pixels per CSS pixel
    inside = np.zeros(pixels.shape[:2], bool)
    inside[round(y0 * scale) + 4:round(y1 * scale) - 4, round(x0 * scale) + 4:round(x1 * scale) - 4] = True
    heat = pixels[..., 0] - pixels[..., 2]  # red minus blue
    assert heat[inside].mean() > heat[~inside].mean() + 40
    item = card.get_attribute("data-id")
    bbox = json.loads(browser.execute_script(
        "return JSON.stringify(window.PATHBIND_VIEW.items.find(i => i.id === arguments[0] "
        "&& i.task === 'pathbind_demo_grounding').boxes[0])", item))
    size = panel.size["width"], panel.size["height"]
    assert abs(x0 / size[0] - bbox[0] / 256) < 0.02 and abs(y1 / size[1] - bbox[3] / 256) < 0.02
    blind = card.find_element("css selector", ".panel[data-run=pathbind_blind]")
    assert not blind.find_elements("css selector", "img.overlay") and "no heat map: " in blind.text


def test_view_without_runs_or_with_a_missing_folder_fails_in_one_line(tmp_path):
    """No RUN_DIR: a usage message; a folder that does not exist: named; a CSV without the viewer's columns:
    named."""
    alone = run([str(BIN / "pathbind"), "view"], cwd=tmp_path)
    assert alone.returncode == 1 and alone.stderr.startswith("pathbind view: error: give RUN_DIR... --out DIR")
    missing = run([str(BIN / "pathbind"), "view", str(tmp_path / "nope"), "--out", str(tmp_path / "s")], cwd=tmp_path)
    assert missing.returncode == 1 and str(tmp_path / "nope") in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "other.csv").write_text("task,id\nx,1\n")
    other = run([str(BIN / "pathbind"), "view", "--reviews", str(tmp_path / "other.csv")], cwd=tmp_path)
    assert other.returncode == 1 and "no column verdict, note, runs" in other.stderr
