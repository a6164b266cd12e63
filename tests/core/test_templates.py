"""Prompt templates: lookup by name across plugins, strict variables, sandboxing."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError

from pathbind import TemplateError, hookimpl, make_plugin_manager, render_template
from pathbind.templates import make_environment, render, template_names


def test_first_party_templates_render_with_their_variables():
    """The MCQ template lists lettered options and asks for the answer tag."""
    text = render_template("mcq", question="Which quadrant?", choices=[("A", "upper-left"), ("B", "lower-right")],
                           thinking=False)
    assert "Which quadrant?\nA. upper-left\nB. lower-right" in text
    assert "<answer>X</answer>" in text and "<think>" not in text


def test_thinking_form_adds_the_reasoning_block():
    """thinking=True asks for <think>...</think> before the answer tag."""
    assert "<think>" in render_template("yesno", question="Is there necrosis?", thinking=True)


def test_a_missing_variable_names_template_and_variable():
    """StrictUndefined: rendering without a needed variable fails with a message naming both."""
    with pytest.raises(TemplateError, match=r"Template 'mcq': 'thinking' is undefined \(variables given: question\): "
                                            r"pass it to render_template\('mcq', \.\.\.\) or take it out"):
        render_template("mcq", question="q")


def test_an_unknown_template_lists_the_available_ones():
    """A lookup miss lists every template name the plugins provide."""
    with pytest.raises(TemplateError, match=r"No prompt template named 'mcqq'\. Available: .*example_stain.*mcq"):
        render_template("mcqq")


def test_the_sandbox_refuses_unsafe_attribute_access(tmp_path):
    """Templates cannot reach Python internals: jinja2's sandbox refuses the attribute, and the error names it."""
    (tmp_path / "evil.jinja").write_text("{{ ''.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(TemplateError) as raised:
        render(make_environment([tmp_path]), "evil", {})
    assert str(raised.value) == "Template 'evil': access to attribute '__class__' of 'str' object is unsafe."
    assert isinstance(raised.value.__context__, SecurityError)


def test_syntax_errors_name_the_template_and_line(tmp_path):
    """A malformed template reports its name and line."""
    (tmp_path / "bad.jinja").write_text("line one\n{% if %}")
    with pytest.raises(TemplateError, match=r"Template 'bad' line 2"):
        render(make_environment([tmp_path]), "bad", {})


def test_a_tryfirst_plugin_overrides_a_first_party_template_by_name(tmp_path):
    """A third party's ``mcq`` wins over ours when its hook is tryfirst, and the shadowing is visible."""
    (tmp_path / "mcq.jinja").write_text("custom {{ question }}")

    class Override:
        @hookimpl(tryfirst=True)
        def pathbind_template_dirs(self):
            return [tmp_path]

    dirs = make_plugin_manager(plugins={"override": Override()}).template_dirs()
    assert dirs[0] == tmp_path
    assert render(make_environment(dirs), "mcq", {"question": "Q"}) == "custom Q"
    assert len(template_names(dirs)["mcq"]) == 2
