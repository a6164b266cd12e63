"""Process-wide settings a model declares and tasks read: the box coordinate convention.

lmms-eval builds the model before it renders any prompt or scores any answer, so the model sets the
convention once (PathBind's ``AdapterModel`` does it from its adapter's ``box_convention`` attribute) and the
grounding tasks both ask for boxes in it and read the answers back with it. Models PathBind does not wrap
(lmms-eval's own ``qwen2_5_vl``, ``llava``, ...) take it from ``PATHBIND_BOX_CONVENTION``.
"""

from __future__ import annotations

import os

BOX_CONVENTIONS = ("pixel", "unit", "per_mille")  # image pixels; fractions 0-1; thousandths 0-1000 (Qwen-VL)
DEFAULT_BOX_CONVENTION = "pixel"
BOX_CONVENTION_ENV = "PATHBIND_BOX_CONVENTION"

_declared: str | None = None


def set_box_convention(name: str | None) -> None:
    """Declare the coordinate convention of the model in this process; None returns to the default."""
    global _declared
    _check(name, "set_box_convention")
    _declared = name


def box_convention() -> str:
    """The declared convention, else ``$PATHBIND_BOX_CONVENTION``, else ``"pixel"``."""
    if _declared is not None:
        return _declared
    name = os.environ.get(BOX_CONVENTION_ENV) or DEFAULT_BOX_CONVENTION
    _check(name, BOX_CONVENTION_ENV)
    return name


def _check(name: str | None, where: str) -> None:
    if name is not None and name not in BOX_CONVENTIONS:
        raise ValueError(f"{where}: unknown box convention {name!r}; known: {', '.join(BOX_CONVENTIONS)}")
