"""Registers PathBind's analysis commands and its one run-reading aggregation with the plugin system."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pathbind import hookimpl


@hookimpl
def pathbind_add_commands(subparsers: argparse._SubParsersAction) -> None:
    from pathbind_analysis.audit.duplicates.command import add_duplicates_command
    from pathbind_analysis.audit.features.command import add_features_command
    from pathbind_analysis.audit.features.embed import add_embed_command
    from pathbind_analysis.audit.leakage.command import add_audit_command
    from pathbind_analysis.curation.command import add_curation_commands
    from pathbind_analysis.matched.command import add_matched_command
    from pathbind_analysis.pairs import add_pairs_command
    from pathbind_analysis.report.command import add_report_command
    from pathbind_analysis.view.command import add_view_command

    add_curation_commands(subparsers)
    add_audit_command(subparsers)
    add_features_command(subparsers)
    add_embed_command(subparsers)
    add_duplicates_command(subparsers)
    add_pairs_command(subparsers)
    add_matched_command(subparsers)
    add_report_command(subparsers)
    add_view_command(subparsers)


@hookimpl
def pathbind_metrics() -> dict[str, Callable[..., object]]:
    from pathbind_analysis.audit.leakage.in_run import leakage_split  # reads the training inventory: not a pure metric

    return {"leakage_split": leakage_split}


@hookimpl
def pathbind_compare_with_baseline(results: dict[str, Any], baseline: str) -> None:
    from pathbind_analysis.baseline import compare_with_baseline

    compare_with_baseline(results, baseline)
