"""PathBind: plugin framework that tells whether a vision-language model sees pathology."""

from pathbind.hookspecs import hookimpl, hookspec
from pathbind.plugins import ModelSpec, PluginManager, get_plugin_manager, make_plugin_manager
from pathbind.templates import TemplateError, render_template

__all__ = [
    "ModelSpec",
    "PluginManager",
    "TemplateError",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "make_plugin_manager",
    "render_template",
]
