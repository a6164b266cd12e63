"""Registers PathBind's metric functions with the plugin system (by name, for task YAMLs)."""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from pathbind_metrics.aggregations import named_aggregations

# The marker is rebuilt from pluggy so that pathbind_metrics stays free of PathBind imports.
hookimpl = pluggy.HookimplMarker("pathbind")


@hookimpl
def pathbind_metrics() -> dict[str, Callable[..., object]]:
    return named_aggregations()
