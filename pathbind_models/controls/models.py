"""The controls as lmms-eval models: ``pathbind_control`` and ``pathbind_blind``."""

from __future__ import annotations

from pathbind_models.controls.blind import BlindControl
from pathbind_models.controls.positive import PositiveControl
from pathbind_models.lmms_model import AdapterModel


class PositiveControlModel(AdapterModel):
    adapter_class = PositiveControl
    samples = False


class BlindControlModel(AdapterModel):
    adapter_class = BlindControl
    samples = False
