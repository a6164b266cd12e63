"""Plugin discovery, isolation of broken plugins, disabling, and conflict reports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import write_plugin

import pathbind
from pathbind import ModelSpec, hookimpl, make_plugin_manager

FIRST_PARTY = {"pathbind_tasks", "pathbind_models", "pathbind_analysis"}


def test_first_party_and_example_plugins_come_from_the_entry_point_group(pm):
    """Our plugin packages and the example plugin are all registered through the ``pathbind`` group."""
    assert {*FIRST_PARTY, "example"} <= {name for name, _ in pm.list_name_plugin()}
    assert pm.failures == {}


def test_contributions_are_attributed_to_their_plugin(pm):
    """Each model, metric, demo data function, image encoder and task directory names the plugin that contributed
    it."""
    assert pm.models()["pathbind_control"].plugin == "pathbind_models"
    assert pm.demo_data()["grounding_items"].plugin == "pathbind_tasks"
    assert pm.image_encoders()["pathbind_hf"].plugin == "pathbind_models"
    assert pm.metrics()["mg"].plugin == "pathbind_tasks"
    assert pm.metrics()["example_stain_accuracy"].plugin == "example"
    assert {c.plugin for c in pm.task_dirs()} >= {"pathbind_tasks", "example"}


class Raising:
    @hookimpl
    def pathbind_models(self):
        raise RuntimeError("model registry unreachable")


def test_a_plugin_whose_hook_raises_is_reported_and_the_others_still_answer():
    """A raising hook is recorded under the plugin's name; other plugins' models are still returned."""
    pm = make_plugin_manager(plugins={"raising": Raising()})
    assert "pathbind_control" in pm.models()
    assert pm.failures["raising"] == ["RuntimeError in pathbind_models: model registry unreachable"]


def test_a_plugin_that_fails_to_import_is_reported_by_name(tmp_path, monkeypatch):
    """An entry point whose module raises on import does not stop the other plugins from loading."""
    write_plugin(tmp_path, "broken_plugin", "raise ImportError('needs a GPU library')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = make_plugin_manager()
    assert pm.failures == {"broken_plugin": ["ImportError: needs a GPU library"]}
    assert "pathbind_control" in pm.models()


def test_a_plugin_with_a_misspelled_hook_is_rejected_at_registration(tmp_path, monkeypatch):
    """pluggy validates hook names when the plugin registers; the error names the plugin."""
    write_plugin(tmp_path, "typo_plugin", """
        import pathbind

        @pathbind.hookimpl
        def pathbind_task_dir():
            return []
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = make_plugin_manager()
    [error] = pm.failures["typo_plugin"]
    assert error.startswith("PluginValidationError: unknown hook pathbind_task_dir; PathBind hooks:")
    assert "pathbind_task_dirs" in error


def test_plugins_can_be_disabled_by_name(monkeypatch):
    """PATHBIND_DISABLE_PLUGINS skips the named entry points."""
    monkeypatch.setenv("PATHBIND_DISABLE_PLUGINS", "example, pathbind_models")
    pm = make_plugin_manager()
    assert "pathbind_control" not in pm.models()
    assert "example_stain_accuracy" not in pm.metrics()
    assert "mg" in pm.metrics()
    assert pm.is_blocked("example") and pm.is_blocked("pathbind_models")


def test_doctor_lists_a_disabled_plugin_as_disabled_and_nothing_else(monkeypatch):
    """A blocked name is one WARN line, never an OK line for pluggy's placeholder."""
    from pathbind.doctor import _plugins

    monkeypatch.setenv("PATHBIND_DISABLE_PLUGINS", "example")
    checks = [(c.name, c.status, c.detail) for c in _plugins(make_plugin_manager()) if c.name == "plugin example"]
    assert checks == [("plugin example", "WARN", "disabled by PATHBIND_DISABLE_PLUGINS")]


def test_a_disabled_plugin_is_never_imported(tmp_path, monkeypatch):
    """Disabling a plugin that cannot be imported silences it: pluggy blocks the name before the entry point loads."""
    write_plugin(tmp_path, "broken_plugin", "raise ImportError('needs a GPU library')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PATHBIND_DISABLE_PLUGINS", "broken_plugin")
    pm = make_plugin_manager()
    assert pm.failures == {} and pm.get_plugin("broken_plugin") is None


class Duplicate:
    @hookimpl
    def pathbind_models(self):
        return [ModelSpec("pathbind_control", simple_class_path="elsewhere.Model")]

    @hookimpl
    def pathbind_metrics(self):
        return {"mg": len}


def test_duplicate_names_are_reported_and_the_first_in_call_order_wins():
    """Two plugins contributing the same model or metric name produce a conflict report naming both."""
    pm = make_plugin_manager(plugins={"duplicate": Duplicate()})
    # pluggy calls later registrations first: the entry points registered after "duplicate" win.
    assert pm.models()["pathbind_control"].plugin == "pathbind_models"
    assert pm.metrics()["mg"].plugin == "pathbind_tasks"
    assert pm.conflicts == [
        "model 'pathbind_control' from plugin 'duplicate' is shadowed by plugin 'pathbind_models'",
        "metric 'mg' from plugin 'duplicate' is shadowed by plugin 'pathbind_tasks'",
    ]


def test_plugin_metrics_are_importable_by_name_for_task_yamls():
    """``pathbind.plugin_metrics.<name>`` resolves through the plugins; unknown names list the available ones."""
    from pathbind import plugin_metrics
    from pathbind_tasks.common.vqa_aggregations import mg

    assert plugin_metrics.mg is mg
    with pytest.raises(AttributeError, match=r"No PathBind plugin provides a metric named 'nope'\. Available: .*mg"):
        plugin_metrics.nope  # noqa: B018


def test_hooks_are_documented():
    """The Hooks section of docs/plugins.md lists exactly the hooks the manager knows, and each spec has a docstring."""
    page = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text()
    section = page.split("\n## Hooks\n", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^- `(pathbind_\w+)\(", section, flags=re.MULTILINE)
    specs = sorted(name for name, caller in vars(make_plugin_manager(autoload=False).hook).items() if caller.spec)
    assert specs == ["pathbind_add_commands", "pathbind_compare_with_baseline", "pathbind_demo_data",
                     "pathbind_image_encoders", "pathbind_metrics",
                     "pathbind_models", "pathbind_task_dirs", "pathbind_task_variants", "pathbind_template_dirs"]
    assert sorted(documented) == specs
    for name in specs:
        assert getattr(pathbind.hookspecs, name).__doc__, name


def test_tracing_logs_every_hook_call(monkeypatch, logged_warnings):
    """PATHBIND_TRACE_PLUGINS=1 logs each plugin's hook call with its result."""
    monkeypatch.setenv("PATHBIND_TRACE_PLUGINS", "1")
    make_plugin_manager().models()
    trace = "pathbind trace: pathbind_models.pathbind_models() -> [ModelSpec("
    assert any(m.startswith(trace) for m in logged_warnings)


def test_a_hook_wrapper_is_refused_at_registration_and_the_others_still_answer(tmp_path, monkeypatch):
    """A plugin with a hook wrapper, new style or old, is refused when it registers, its failure naming the hooks
    and the fix; the other plugins' contributions are all there, the refused plugin's none."""
    write_plugin(tmp_path, "wrapping_plugin", """
        import pathbind

        @pathbind.hookimpl(wrapper=True)
        def pathbind_metrics():
            results = yield
            return [*results, {"wrapped": len}]

        @pathbind.hookimpl(hookwrapper=True)
        def pathbind_template_dirs():
            yield
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = make_plugin_manager()
    assert pm.failures == {"wrapping_plugin": [
        "PluginValidationError: hook wrapper pathbind_metrics, pathbind_template_dirs; PathBind hooks take "
        "contributions only (drop wrapper=True/hookwrapper=True, order with tryfirst/trylast)"]}
    assert "mg" in pm.metrics() and "wrapped" not in pm.metrics() and pm.template_dirs()
    assert pm.get_plugin("wrapping_plugin") is None


class Ordered:
    """Two hooks of one plugin, one tried first and one last."""

    @hookimpl(tryfirst=True)
    def pathbind_metrics(self):
        return {"ordered_first": len}

    @hookimpl(trylast=True)
    def pathbind_demo_data(self):
        raise RuntimeError("no demo data here")


def test_implementations_run_in_pluggys_order_and_each_failure_is_its_own(monkeypatch):
    """Each implementation is called in pluggy's order (tryfirst first, then the latest registered); one raising
    leaves the others' results, in the same order as an unguarded pluggy call gives them."""
    pm = make_plugin_manager(plugins={"ordered": Ordered()})
    plugins = [plugin for plugin, _ in pm.call_each("pathbind_metrics")]
    assert plugins[0] == "ordered"
    monkeypatch.delattr(Ordered, "pathbind_demo_data")
    unguarded = make_plugin_manager(plugins={"ordered": Ordered()}).hook.pathbind_metrics()
    assert [sorted(result) for _, result in pm.call_each("pathbind_metrics")] == [sorted(r) for r in unguarded]
    assert "grounding_items" in pm.demo_data()
    assert pm.failures == {"ordered": ["RuntimeError in pathbind_demo_data: no demo data here"]}


def test_the_example_plugin_scores_an_unparseable_answer_invalid_and_wrong():
    """Like the first-party tasks: an answer naming no option is an explicit invalid, counted wrong, and the
    task reports invalid_rate."""
    from pathbind_example import scoring

    doc = {"id": "stain-0", "options": ["hematoxylin", "eosin"], "answer": "A"}
    records = [scoring.process_results(doc, [answer]) for answer in ("<answer>A</answer>", "purple, mostly")]
    assert records[0]["stain_accuracy"] is records[0]["invalid_rate"]
    assert [(r["stain_accuracy"]["valid"], r["stain_accuracy"]["correct"]) for r in records] == [(True, True),
                                                                                                  (False, False)]
    assert records[1]["stain_accuracy"]["reason"] == "unparseable answer"
    metrics = make_plugin_manager().metrics()
    values = [r["stain_accuracy"] for r in records]
    assert metrics["example_stain_accuracy"].value(values) == 50.0
    assert metrics["invalid_rate"].value(values) == 50.0
