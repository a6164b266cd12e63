"""Strict JSON for every ``--json``: undefined figures (NaN, ±infinity) as null, never the bare tokens."""

from __future__ import annotations

import json
import math
from typing import Any


def to_strict(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf) as None, recursively; tuples become lists, numpy scalars
    and arrays their Python values.

    Examples
    --------
    >>> to_strict({"auroc": float("nan"), "ratio": [1.0, float("inf")], "n": (2,)})
    {'auroc': None, 'ratio': [1.0, None], 'n': [2]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key if isinstance(key, str) else str(key): to_strict(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_strict(item) for item in value]
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":  # numpy scalars and arrays
        return to_strict(value.tolist())
    return value


def dumps_strict(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`to_strict` (``value``) with ``allow_nan=False``: what strict parsers
    (JavaScript's ``JSON.parse``, ``jq``) accept. Keyword arguments go to ``json.dumps``.

    Examples
    --------
    >>> dumps_strict([float("nan"), float("-inf"), 0.5])
    '[null, null, 0.5]'
    """
    return json.dumps(to_strict(value), allow_nan=False, **kwargs)
