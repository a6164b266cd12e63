"""lmms-eval's ``--baseline`` checked before the run: a local sample log that cannot be read stops the run before the
model loads, in words, instead of a warning per task once every answer is in (lmms-eval's loader warns and pairs
nothing, and the run exits 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathbind.lmms_output import SampleLogError, find_sample_logs, read_sample_log

EXPECTED = ("the sample log of an earlier run written with --log_samples: <output_path>/<date>_samples_<task>.jsonl "
            "for a model without pretrained=, <output_path>/<checkpoint>/<date>_samples_<task>.jsonl with it")


class BaselineError(ValueError):
    """``--baseline`` names a local sample log that cannot be read; the message says what is there and the fix."""


def require_readable_baseline(value: Any) -> None:
    """BaselineError unless ``value`` is unset (not text), one of lmms-eval's presets or hub addresses, or a readable
    sample log (its first line a JSON object)."""
    if not isinstance(value, str) or not value or _not_a_local_path(value):
        return
    path = Path(value).expanduser()
    if path.is_dir():
        logs = [str(log) for log in find_sample_logs(path)]
        found = f"sample logs below it: {', '.join(logs[:3])}{' …' if len(logs) > 3 else ''}" if logs else \
            "no sample log below it"
        raise BaselineError(f"--baseline {value}: a folder, not a sample log ({found}); give one file, {EXPECTED}")
    if not path.exists():
        pattern = " (a shell pattern that matches no file is passed on as written)" if set("*?[") & set(value) else ""
        raise BaselineError(f"--baseline {value}: no such file{pattern}; give {EXPECTED}")
    try:
        first = next(read_sample_log(path), None)
    except SampleLogError as exc:
        raise BaselineError(f"--baseline {exc}") from None
    if not first or not isinstance(first[1], dict):
        what = "is empty" if first is None else "holds no JSON object on its first line"
        raise BaselineError(f"--baseline {value}: {what}, so it is not a sample log; give {EXPECTED}")


def _not_a_local_path(value: str) -> bool:
    """One of lmms-eval's baseline presets (``qwen25vl``, ``qwen25vl:mmbench``) or a hub address, which lmms-eval's
    own loader reads (``lmms_eval.baselines.loader.load_baseline``)."""
    if value.startswith("hf://") or "huggingface.co" in value:
        return True
    try:
        from lmms_eval.baselines.registry import BASELINE_REGISTRY
    except ImportError:  # an lmms-eval without presets reads local files only
        return False
    return value in BASELINE_REGISTRY or value.partition(":")[0] in BASELINE_REGISTRY
