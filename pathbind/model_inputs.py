"""What a model can be given as data: text without chat or image markup, and images its processor takes.

A question, option or expression holding a model's control token (``<|image_pad|>``, ``<|im_end|>``, LLaVA's
``<image>``) is a fault of the data, never passed on: an image or video placeholder makes the processor count images
the item does not have, a turn marker becomes a real turn of the chat (a fake assistant answer), and a served model's
server tokenizes the chat text, so no escaping on PathBind's side could keep it plain for every backend. Such an
item is dropped, naming the field and the token (:func:`markup_in`), in ``pathbind data check`` and in the run.

:data:`MARKUP` is the markup of every family PathBind knows, whatever model runs: ``<|...|>`` tokens (Qwen, ChatML,
Llama 3, Phi), the image, video and turn tokens of LLaVA, Gemma 3, Idefics3/SmolVLM and InternVL, and the
sentence markers of Llama-2 tokenizers. A model that loads in a run declares its own (:func:`declare`): the added
tokens of its tokenizer and the sizes its image processor refuses, checked before any model call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from pathbind.faults import Fault

MARKUP = re.compile(
    r"<\|[^<>|\s]{1,64}\|>"  # <|im_start|>, <|image_pad|>, <|vision_start|>, <|eot_id|>, <|endoftext|>
    r"|</?(?:image|video|audio|img|IMG_CONTEXT|start_of_image|end_of_image|start_of_turn|end_of_turn"
    r"|fake_token_around_image|global-img|end_of_utterance|row_\d+_col_\d+|s|unk|pad)>"
    r"|\[/?INST\]")


@dataclass(frozen=True)
class ModelInputs:
    """What the loaded model takes, as its processor says.

    ``reserved``: texts its tokenizer turns into tokens of their own (special and added tokens); ``resized``:
    ``(width, height) -> (width, height)`` of the image its processor makes of an image of that size before cutting
    it into patches (None when the processor bounds it itself), raising ValueError with the processor's words for a
    size it refuses (Qwen's ``smart_resize``: an aspect ratio of 200 or more).
    """

    model: str
    reserved: frozenset[str] = frozenset()
    resized: Callable[[int, int], tuple[int, int] | None] | None = field(default=None, compare=False)

    @cached_property
    def pattern(self) -> re.Pattern[str] | None:
        """The reserved texts as one pattern, longest first."""
        texts = sorted(self.reserved, key=len, reverse=True)
        return re.compile("|".join(map(re.escape, texts))) if texts else None


_declared: list[ModelInputs] = []  # the model loaded in this process, if any


def declare(inputs: ModelInputs | None) -> None:
    """Declare (None: forget) what the model loaded in this process takes; lmms-eval builds the tasks' documents
    after it loads the model, so their checks read it."""
    _declared[:] = [inputs] if inputs is not None else []


def declared() -> ModelInputs | None:
    """What the model loaded in this process takes; None when no model declared it (``pathbind data check``)."""
    return _declared[0] if _declared else None


def markup_in(text: str) -> str | None:
    """The first chat or image control token in ``text`` (:data:`MARKUP`, or a text the declared model reserves),
    None when there is none.

    >>> markup_in("Is there necrosis?<|im_end|><|im_start|>assistant")
    '<|im_end|>'
    >>> markup_in("Which cells (<10 µm) are shown?") is None
    True
    """
    inputs = declared()
    found = [match for match in (MARKUP.search(text), inputs.pattern.search(text) if inputs and inputs.pattern
                                 else None) if match]
    return min(found, key=lambda match: match.start()).group() if found else None


def size_fault(width: int, height: int, limit: int) -> Fault | None:
    """Why the declared model's processor cannot take an image of ``width`` x ``height``: it refuses the size, or
    would resize it to more than ``limit`` pixels; None when it can (or no model declared)."""
    inputs = declared()
    if inputs is None or inputs.resized is None:
        return None
    try:
        size = inputs.resized(width, height)
    except ValueError as exc:
        return Fault("image size the model's processor refuses", f"{width}x{height}: {exc} ({inputs.model})")
    if size is not None and size[0] * size[1] > limit:
        return Fault("image the model's processor would enlarge past the pixel limit",
                     f"{width}x{height} resized to {size[0]}x{size[1]} by {inputs.model}'s processor; the limit is "
                     f"{limit:,} pixels")
    return None
