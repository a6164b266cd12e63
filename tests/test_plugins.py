"""Plugin discovery, isolation of broken plugins, disabling, and conflict reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_plugin

import pathbind
from pathbind import ModelSpec, hookimpl, make_plugin_manager

FIRST_PARTY = {"pathbind_tasks", "pathbind_models", "pathbind_metrics", "pathbind_analysis"}


def test_first_party_and_example_plugins_come_from_the_entry_point_group(pm):
    """Our three packages and the example plugin are all registered through the ``pathbind`` group."""
    assert {*FIRST_PARTY, "example"} <= {name for name, _ in pm.list_name_plugin()}
    assert pm.failures == {}


def test_contributions_are_attributed_to_their_plugin(pm):
    """Each model, metric and task directory names the plugin that contributed it."""
    assert pm.models()["pathbind_control"].plugin == "pathbind_models"
    assert pm.metrics()["mg"].plugin == "pathbind_metrics"
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
    assert pm.metrics()["mg"].plugin == "pathbind_metrics"
    assert pm.conflicts == [
        "model 'pathbind_control' from plugin 'duplicate' is shadowed by plugin 'pathbind_models'",
        "metric 'mg' from plugin 'duplicate' is shadowed by plugin 'pathbind_metrics'",
    ]


def test_plugin_metrics_are_importable_by_name_for_task_yamls():
    """``pathbind.plugin_metrics.<name>`` resolves through the plugins; unknown names list the available ones."""
    from pathbind import plugin_metrics
    from pathbind_metrics.aggregations import mg

    assert plugin_metrics.mg is mg
    with pytest.raises(AttributeError, match=r"No PathBind plugin provides a metric named 'nope'\. Available: .*mg"):
        plugin_metrics.nope  # noqa: B018


def test_hooks_are_documented():
    """Every hook spec has a docstring (the plugin-author guide is built from them) and the README names it."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    specs = [name for name in dir(pathbind.hookspecs) if name.startswith("pathbind_")]
    assert len(specs) >= 5
    for name in specs:
        assert getattr(pathbind.hookspecs, name).__doc__, name
        assert f"`{name}" in readme, f"README does not document hook {name}"


def test_tracing_logs_every_hook_call(monkeypatch, caplog):
    """PATHBIND_TRACE_PLUGINS=1 logs each plugin's hook call with its result."""
    monkeypatch.setenv("PATHBIND_TRACE_PLUGINS", "1")
    make_plugin_manager().models()
    assert any(r.getMessage().startswith("pathbind trace: pathbind_models.pathbind_models() -> [ModelSpec(")
               for r in caplog.records)
