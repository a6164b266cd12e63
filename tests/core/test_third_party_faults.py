"""A third party's faults stay where they are: an adapter answering None or a number for one request makes that item
invalid with the cause, a plugin aggregation that raises or returns None fails its task by name while every other
task is kept, a template's missing variable names the task and the fix, and a credential in --model_args is never
printed."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

import pytest
from conftest import BIN, lmms_eval, run, write_plugin
from PIL import Image

SECRET = "sk-test-4f9a1c77b2e0d5a3"
TASKS = "faulty_key,faulty_none"

PLUGIN = """
    from pathlib import Path

    import pathbind

    HERE = Path(__file__).parent


    @pathbind.hookimpl
    def pathbind_task_dirs():
        return [HERE / "faulty_tasks"]


    @pathbind.hookimpl
    def pathbind_template_dirs():
        return [HERE / "faulty_templates"]


    @pathbind.hookimpl
    def pathbind_models():
        return [pathbind.ModelSpec("faulty_adapter", simple_class_path="faulty_model.FaultyModel")]


    @pathbind.hookimpl
    def pathbind_metrics():
        import faulty_scoring

        return {"faulty_label_accuracy": faulty_scoring.label_accuracy, "faulty_nothing": faulty_scoring.nothing}
"""
MODEL = """
    import zlib

    from pathbind_models.lmms_model import AdapterModel


    class FaultyAdapter:
        '''A served model's client: per prompt, None, a number, a dropped connection or a letter.'''

        def __init__(self, api_key):
            self.api_key = api_key

        def generate(self, images, text, **gen_kwargs):
            kind = (zlib.crc32(text.encode()) + len(images)) % 4
            if kind == 2:
                raise ConnectionError("the server closed the connection")
            return (None, 7, None, "<answer>A</answer>")[kind]


    class FaultyModel(AdapterModel):
        adapter_class = FaultyAdapter
"""
SCORING = """
    from pathlib import Path

    from PIL import Image

    import pathbind

    HERE = Path(__file__).parent / "faulty_tasks"


    def doc_to_visual(doc):
        with Image.open(HERE / doc["image_file"]) as image:
            return [image.convert("RGB")]


    def doc_to_text(doc, lmms_eval_specific_kwargs=None):
        return pathbind.render_template("faulty_prompt", question=doc["question"])


    def doc_to_text_with_hint(doc, lmms_eval_specific_kwargs=None):
        return pathbind.render_template("faulty_hint", question=doc["question"])


    def process_results(doc, results):
        record = {"id": doc["id"], "answered": results[0].strip() == "<answer>A</answer>"}
        return {"label_accuracy": record, "answered": record, "nothing": record}


    def answered(records):
        return 100 * sum(r["answered"] for r in records) / len(records)


    def label_accuracy(records):
        return 100 * sum(r["label"] == "A" for r in records) / len(records)  # no record has a label


    def nothing(records):
        return None
"""
BASE = """
    dataset_path: json
    dataset_kwargs:
      data_files:
        test: rows.jsonl
    test_split: test
    output_type: generate_until
    doc_to_visual: !function faulty_scoring.doc_to_visual
    doc_to_text: !function faulty_scoring.doc_to_text
    doc_to_target: answer
    generation_kwargs:
      max_new_tokens: 8
    process_results: !function faulty_scoring.process_results
    metadata:
      version: 1
"""


def metric_entry(name: str, aggregation: str) -> str:
    return f"  - metric: {name}\n    aggregation: !function {aggregation}\n    higher_is_better: true\n"


@pytest.fixture(scope="module")
def faulty_plugin(tmp_path_factory) -> Path:
    """The plugin installed as a third party installs one (a dist-info in the `pathbind` entry-point group): a
    model, three tasks on four stained tiles, a template and two metrics by name."""
    site = tmp_path_factory.mktemp("site")
    answered = metric_entry("answered", "faulty_scoring.answered")
    files = {"faulty_model.py": MODEL, "faulty_scoring.py": SCORING,
             "faulty_templates/faulty_prompt.jinja": "Look at the tile.\n{{ question }}\n",
             "faulty_templates/faulty_hint.jinja": "{{ hint_text }}\n{{ question }}\n",
             "faulty_tasks/_faulty.yaml": BASE,
             "faulty_tasks/faulty_key.yaml": "task: faulty_key\ninclude: _faulty.yaml\nmetric_list:\n" + answered
             + metric_entry("label_accuracy", "pathbind.plugin_metrics.faulty_label_accuracy"),
             "faulty_tasks/faulty_none.yaml": "task: faulty_none\ninclude: _faulty.yaml\nmetric_list:\n" + answered
             + metric_entry("nothing", "pathbind.plugin_metrics.faulty_nothing"),
             "faulty_tasks/faulty_template.yaml": "task: faulty_template\ninclude: _faulty.yaml\n"
             "doc_to_text: !function faulty_scoring.doc_to_text_with_hint\nmetric_list:\n" + answered}
    write_plugin(site, "faulty_plugin", PLUGIN, files)
    rows = [{"id": f"s{i}", "image_file": f"tile_{i}.png", "question": f"Which stain is tile {i}?", "answer": "A"}
            for i in range(4)]
    (site / "faulty_tasks" / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    for i in range(4):
        Image.new("RGB", (16, 16), (200, 40 * i, 160)).save(site / "faulty_tasks" / f"tile_{i}.png")
    return site


@pytest.fixture(scope="module")
def faulty_run(faulty_plugin, tmp_path_factory) -> dict:
    """The adapter on PathBind's demo VQA and on both faulty tasks, in batches of 4, its key in --model_args."""
    return lmms_eval(tmp_path_factory.mktemp("run"), "faulty_adapter", f"pathbind_demo_vqa,{TASKS}", "--limit", "8",
                     "--batch_size", "4", "--model_args", f"api_key={SECRET}",
                     env={"PYTHONPATH": str(faulty_plugin)}, exit_code=1)


@pytest.mark.slow
def test_an_answer_that_is_not_text_makes_its_item_invalid_with_the_cause(faulty_run):
    """Every demo item gets the reason of its own answer: None and a number are named with the adapter, a dropped
    connection with its error; the letters are scored. The run went on past all of them."""
    log = next(faulty_run["out"].rglob("*_samples_pathbind_demo_vqa.jsonl"))
    causes = ["the model could not answer: TypeError: FaultyAdapter.generate returned NoneType None, not the "
              "answer's text (a str)",
              "the model could not answer: TypeError: FaultyAdapter.generate returned int 7, not the answer's text "
              "(a str)", "the model could not answer: ConnectionError: the server closed the connection", ""]
    samples = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = [(zlib.crc32(s["input"].encode()) + (s["pathbind"]["condition"] == "image")) % 4 for s in samples]
    assert len(samples) == 8 and set(kinds) == {0, 1, 2, 3}
    for sample, kind in zip(samples, kinds, strict=True):
        assert sample["pathbind"]["valid"] == (kind == 3) and sample["pathbind"]["reason"] == causes[kind], kind
    results = faulty_run["results"]["results"]["pathbind_demo_vqa"]
    assert results["invalid_rate,none"] == pytest.approx(100 * sum(not s["pathbind"]["valid"] for s in samples) / 8)


@pytest.mark.slow
def test_a_plugin_aggregation_that_raises_or_returns_none_fails_its_task_alone(faulty_run, tmp_path):
    """Exit 1 with each failed task, metric, aggregation and plugin on the last line; their other metric, and the
    demo task, are computed; the failed metric is NaN (visibly missing); `pathbind summary` shows the kept tasks
    and names the failures."""
    last = faulty_run["stderr"].strip().splitlines()[-1]
    assert last == (
        "lmms_eval: error: task faulty_key failed: metric 'label_accuracy': its aggregation "
        "faulty_scoring.label_accuracy (plugin 'faulty_plugin', metric 'faulty_label_accuracy') raised KeyError: "
        "'label'; task faulty_none failed: metric 'nothing': its aggregation faulty_scoring.nothing (plugin "
        "'faulty_plugin', metric 'faulty_nothing') returned NoneType None, not a number or a JSON object")
    results = faulty_run["results"]
    assert set(results["pathbind"]["failed_tasks"]) == {"faulty_key", "faulty_none"}
    for task, failed in (("faulty_key", "label_accuracy"), ("faulty_none", "nothing")):
        assert math.isnan(results["results"][task][f"{failed},none"])
        assert 0 <= results["results"][task]["answered,none"] <= 100
    assert results["results"]["pathbind_demo_vqa"]["acc_image,none"] >= 0

    done = run([str(BIN / "pathbind"), "summary", str(faulty_run["out"])], cwd=tmp_path)
    assert done.returncode == 0 and "pathbind_demo_vqa" in done.stdout and "faulty_key" in done.stdout
    assert ("pathbind summary: warning: faulty_key failed in its run: metric 'label_accuracy': its aggregation "
            "faulty_scoring.label_accuracy (plugin 'faulty_plugin'") in done.stderr
    assert "pathbind summary: warning: faulty_none failed in its run: metric 'nothing'" in done.stderr


@pytest.mark.slow
def test_a_credential_in_model_args_is_never_printed(faulty_run):
    """lmms-eval's console header, its log and PathBind's lines show [REDACTED]; the results file and the sample logs
    hold no key either."""
    printed = faulty_run["stdout"] + faulty_run["stderr"]
    assert SECRET not in printed and "api_key=[REDACTED]" in printed
    header = next(line for line in faulty_run["stdout"].splitlines() if line.startswith("faulty_adapter ("))
    assert header.startswith("faulty_adapter (api_key=[REDACTED])")
    assert all(SECRET not in file.read_text() for file in faulty_run["out"].rglob("*") if file.is_file())


@pytest.mark.slow
def test_a_templates_missing_variable_names_the_task_the_document_and_the_fix(faulty_plugin, tmp_path):
    """Not jinja's `UndefinedError: 'hint_text' is undefined`: the task, the function and document, the template,
    the variables given and what to do."""
    done = run([str(BIN / "lmms_eval"), "--model", "faulty_adapter", "--model_args", "api_key=x", "--tasks",
                "faulty_template", "--output_path", str(tmp_path / "out")], cwd=tmp_path,
               env={"PYTHONPATH": str(faulty_plugin)})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "lmms_eval: error: TaskError: task faulty_template: doc_to_text failed on document s0: TemplateError: "
        "Template 'faulty_hint': 'hint_text' is undefined (variables given: question): pass it to "
        "render_template('faulty_hint', ...) or take it out of the template")


def test_the_redaction_covers_the_keys_lmms_eval_redacts_and_hugging_face_tokens():
    """A value after api_key, token, *token, *secret or *password goes, and a long one wherever it appears again;
    other values and short words stay, and so do Hugging Face tokens' neighbours."""
    from pathbind.lmms.redact import redact, redact_model_args, secret_values

    args = f"pretrained=org/model,api_key={SECRET},HF_TOKEN=tok,db_password=pw,tokenizer=fast,base_url=EMPTY"
    assert set(secret_values(args)) == {SECRET, "tok", "pw"}
    assert redact_model_args(args) == ("pretrained=org/model,api_key=[REDACTED],HF_TOKEN=[REDACTED],"
                                       "db_password=[REDACTED],tokenizer=fast,base_url=EMPTY")
    assert redact(f"401: key {SECRET} refused; tok is a word", secret_values(args)) == (
        "401: key [REDACTED] refused; tok is a word")
    token = "hf_" + "a1B2" * 6
    assert redact(f"login with {token} please") == "login with [REDACTED] please"
