"""Plugin metrics by name, for task YAMLs: ``aggregation: !function pathbind.plugin_metrics.<name>``."""

from __future__ import annotations

from collections.abc import Callable

from pathbind.plugins import plugin_metric


def __getattr__(name: str) -> Callable[..., object]:
    if name.startswith("__"):
        raise AttributeError(name)
    return plugin_metric(name)
