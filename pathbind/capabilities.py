"""What a task needs from a model beyond generated text, and which of an lmms-eval run's tasks a model can answer.

A task declares its needs in its YAML, ``metadata: {pathbind_requires: [attention]}``; an lmms-eval model class
declares what it offers, ``pathbind_capabilities: frozenset[str]``. A class without the attribute (lmms-eval's
``openai``, ``vllm``, ``sglang``, ...) offers generated text only. Nothing here imports lmms-eval: task
dictionaries are walked by shape (groups are dicts, tasks carry ``config.metadata``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

REQUIRES_KEY = "pathbind_requires"
CAPABILITIES_ATTRIBUTE = "pathbind_capabilities"
CAPABILITIES = {
    "attention": "attention maps from the model's own attention",
    "option_scores": "log-probabilities of the answer options",
}
CAPABLE_MODEL = "pathbind_hf"  # PathBind's Hugging Face adapter offers every capability above


def task_requirements(metadata: Mapping[str, Any] | None) -> frozenset[str]:
    """The capabilities a task's ``metadata`` asks for (a name or a list of names under ``pathbind_requires``)."""
    declared = (metadata or {}).get(REQUIRES_KEY) or ()
    return frozenset([declared] if isinstance(declared, str) else (str(name) for name in declared))


def model_capabilities(model: object) -> frozenset[str]:
    """What an lmms-eval model (class or instance) declares it offers; nothing when it declares nothing."""
    return frozenset(getattr(model, CAPABILITIES_ATTRIBUTE, None) or ())


def unmet_reason(task: str, requires: Iterable[str], capabilities: frozenset[str], model: str) -> str | None:
    """Why ``model`` cannot run ``task``, or None when it offers everything the task requires."""
    missing = sorted(set(requires) - capabilities)
    unknown = [name for name in missing if name not in CAPABILITIES]
    if unknown:
        return (f"task {task!r} is skipped: its metadata.{REQUIRES_KEY} names {', '.join(map(repr, unknown))}, "
                f"which no PathBind model provides (known: {', '.join(sorted(CAPABILITIES))})")
    if not missing:
        return None
    needs = " and ".join(CAPABILITIES[name] for name in missing)
    return (f"task {task!r} is skipped: it needs {needs} (metadata.{REQUIRES_KEY}: {', '.join(missing)}), which "
            f"model {model} does not provide. Run it with --model {CAPABLE_MODEL} --model_args pretrained=<checkpoint>")


def split_supported(task_dict: Mapping[Any, Any], capabilities: frozenset[str],
                    model: str) -> tuple[dict[Any, Any], dict[str, str]]:
    """``task_dict`` (lmms-eval's nested task and group dictionary) without the tasks ``model`` cannot run,
    and why each was removed; a group left without tasks is removed with them."""
    kept: dict[Any, Any] = {}
    skipped: dict[str, str] = {}
    for key, value in task_dict.items():
        if isinstance(value, Mapping):
            subtasks, reasons = split_supported(value, capabilities, model)
            skipped.update(reasons)
            if subtasks or not value:
                kept[key] = subtasks
            continue
        metadata = getattr(getattr(value, "config", None), "metadata", None)
        reason = unmet_reason(str(key), task_requirements(metadata), capabilities, model)
        if reason is None:
            kept[key] = value
        else:
            skipped[str(key)] = reason
    return kept, skipped
