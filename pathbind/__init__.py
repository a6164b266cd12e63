"""PathBind: plugin framework that tells whether a vision-language model sees pathology.

The public names are imported when first used: torch's start hook imports ``pathbind.lmms.watch`` in every process
that imports torch, which must not pay for the plugin manager and its templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathbind.hookspecs import ModelSpec, TaskVariants, hookimpl, hookspec
    from pathbind.plugins import PluginManager, get_plugin_manager, make_plugin_manager, render_template
    from pathbind.templates import TemplateError

__all__ = [
    "ModelSpec",
    "PluginManager",
    "TaskVariants",
    "TemplateError",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "make_plugin_manager",
    "render_template",
]


def __getattr__(name: str) -> Any:
    if name in ("ModelSpec", "TaskVariants", "hookimpl", "hookspec"):
        from pathbind import hookspecs

        return getattr(hookspecs, name)
    if name in ("PluginManager", "get_plugin_manager", "make_plugin_manager", "render_template"):
        from pathbind import plugins

        return getattr(plugins, name)
    if name == "TemplateError":
        from pathbind import templates

        return templates.TemplateError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
