"""How lmms-eval's generation settings decode a request: sampled at a temperature, or greedy; read once here for the
models that honour them and the metrics that report them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def sampling_temperature(gen_kwargs: Mapping[str, Any]) -> float | None:
    """The temperature a request's generation settings ask to sample at, or None for greedy decoding.

    As lmms-eval's own wrappers and its response cache read them: a ``temperature`` above 0 samples (a task
    YAML's ``do_sample: false`` does not undo a ``--gen_kwargs temperature=0.7``); ``do_sample`` without a
    temperature above 0 names none to sample at, a ValueError that says what to give.

    >>> sampling_temperature({"temperature": 0.7, "do_sample": False}), sampling_temperature({"temperature": 0})
    (0.7, None)
    """
    temperature = gen_kwargs.get("temperature") or 0
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature < 0:
        raise ValueError(f"temperature {temperature!r} is not a number of at least 0 (0: greedy answers)")
    if temperature > 0:
        return float(temperature)
    if gen_kwargs.get("do_sample"):
        raise ValueError("do_sample=True with temperature 0 names no temperature to sample at: give one above 0 "
                         "(--gen_kwargs temperature=0.7), or leave do_sample out for greedy answers")
    return None


def describe_decoding(gen_kwargs: Mapping[str, Any] | None) -> str:
    """``"sampled at temperature 0.7"``, ``"greedy"``, or why the settings decode neither way.

    >>> describe_decoding({"temperature": 0.7}), describe_decoding({"temperature": 0, "do_sample": False})
    ('sampled at temperature 0.7', 'greedy')
    """
    if gen_kwargs is None:
        return "unknown (not run by lmms-eval)"
    try:
        temperature = sampling_temperature(gen_kwargs)
    except ValueError as exc:
        return f"neither: {exc}"
    return "greedy" if temperature is None else f"sampled at temperature {temperature:g}"
