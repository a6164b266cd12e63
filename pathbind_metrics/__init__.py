"""PathBind metrics: pure numpy/scipy functions from arrays to numbers."""

from pathbind_metrics.parsing import choice_letters, parse_choice, parse_yes_no
from pathbind_metrics.vqa import accuracy, multimodal_gain

__all__ = ["accuracy", "choice_letters", "multimodal_gain", "parse_choice", "parse_yes_no"]
