"""Token usage of a run per task and per PathBind condition, from the per-sample counts lmms-eval logs.

lmms-eval 0.7.3 sums API usage for the whole run (``results["usage"]``; model calls are attributed to task
``_unknown`` because one batch serves every task) and per task (``results["efficiency"]``). Split by
condition, the counts also show which requests carried an image: image conditions cost image tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TOKEN_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens")


def usage_by_condition(samples: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, dict[str, dict[str, int]]]:
    """``{task: {condition: {"responses", "input_tokens", "output_tokens", "reasoning_tokens"}}}`` summed over
    the logged samples (lmms-eval's ``results["samples"]``) whose backend reported token counts.

    A document without a ``condition`` column (a task that is not PathBind's) counts under ``"all"``.
    """
    table: dict[str, dict[str, dict[str, int]]] = {}
    for task, task_samples in samples.items():
        for sample in task_samples:
            counts = [c for c in sample.get("token_counts") or () if isinstance(c, Mapping)]
            if not counts:
                continue
            condition = str((sample.get("doc") or {}).get("condition") or "all")
            row = table.setdefault(task, {}).setdefault(condition, dict.fromkeys(("responses", *TOKEN_FIELDS), 0))
            row["responses"] += len(counts)
            for name in TOKEN_FIELDS:
                row[name] += sum(int(c.get(name) or 0) for c in counts)
    return table
