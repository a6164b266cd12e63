"""PathBind: plugin framework that tells whether a vision-language model sees pathology."""

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
