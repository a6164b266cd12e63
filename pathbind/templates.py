"""Prompt templates: Jinja files found by name in template directories, rendered in a sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

SUFFIX = ".jinja"


class TemplateError(ValueError):
    """A template is missing, malformed, or needs a variable it was not given."""


def make_environment(dirs: list[Path]) -> SandboxedEnvironment:
    """A sandboxed environment over ``dirs`` (earlier wins) that refuses undefined variables."""
    return SandboxedEnvironment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def template_names(dirs: list[Path]) -> dict[str, list[Path]]:
    """Map each template name to the files defining it, in lookup order (first one wins)."""
    names: dict[str, list[Path]] = {}
    for directory in dirs:
        for path in sorted(Path(directory).glob(f"*{SUFFIX}")):
            names.setdefault(path.name.removesuffix(SUFFIX), []).append(path)
    return names


def render(env: jinja2.Environment, name: str, variables: dict[str, Any]) -> str:
    """Render template ``name`` with ``variables``; errors name the template and the problem."""
    try:
        return env.get_template(name + SUFFIX).render(**variables).strip()
    except jinja2.TemplateNotFound:
        available = ", ".join(sorted(p.removesuffix(SUFFIX) for p in env.list_templates(extensions=["jinja"])))
        raise TemplateError(f"No prompt template named {name!r}. Available: {available}") from None
    except jinja2.UndefinedError as exc:
        given = ", ".join(sorted(variables)) or "none"
        raise TemplateError(f"Template {name!r}: {exc.message} (variables given: {given}): pass it to "
                            f"render_template({name!r}, ...) or take it out of the template") from None
    except jinja2.exceptions.SecurityError as exc:
        raise TemplateError(f"Template {name!r}: {exc}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"Template {name!r} line {exc.lineno}: {exc.message}") from None

