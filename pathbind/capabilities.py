"""What a task needs from a model beyond generated text, and which of an lmms-eval run's tasks a model can answer.

A task declares its needs in its YAML, ``metadata: {pathbind_requires: [attention]}``; an lmms-eval model class
declares what it offers, ``pathbind_capabilities: frozenset[str]``. A class without the attribute (lmms-eval's
``openai``, ``vllm``, ``sglang``, ...) offers generated text only. Some of lmms-eval's own wrappers also fail on
the documents of a condition (llava_hf on text-only ones): ``KNOWN_CONDITION_FAILURES`` names them, and
:func:`drop_conditions` removes those documents with the reason. Nothing here imports lmms-eval: task
dictionaries are walked by shape (groups are dicts, tasks carry ``config.metadata`` and their datasets).
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


# --- conditions an lmms-eval wrapper cannot answer ---------------------------------------------------------------

EVERY_CONDITION = "*"  # every document: the whole task (any task of the run) is skipped
CONDITION_LABELS = {"text": "text-only (no image)"}
_LLAVA_HF_CHAT = "lmms_eval.models.chat.llava_hf.LlavaHf"
_LLAVA_HF_SIMPLE = "lmms_eval.models.simple.llava_hf.LlavaHf"
# Measured with lmms-eval 0.7.3 and transformers 5 on PathBind's demo tasks (tests/core/test_lmms_wrappers.py, the
# README's wrapper table); keyed by the exact class, since a subclass may override generate_until.
KNOWN_CONDITION_FAILURES = {
    _LLAVA_HF_CHAT: {"text": "its chat generate_until calls the processor with images=[] for a document without "
                             "an image, and transformers' image processor raises IndexError "
                             "(_get_device_from_images), which ends the whole lmms-eval run"},
    _LLAVA_HF_SIMPLE: {"text": "its simple generate_until builds model inputs only for a document with an image or "
                               "video, so a text-only document is answered from the previous document's inputs (its "
                               "image and prompt), or with an empty answer when it comes first"},
    "lmms_eval.models.simple.idefics2.Idefics2": {
        "text": "its generate_until reads the first element of a document's image list, which is empty without an "
                "image (IndexError), and that ends the whole lmms-eval run"},
}
_DROPPED_PROMPT = (f"its simple generate_until applies the tokenizer's chat template to the prompt as a plain string, "
                   f"and this checkpoint's template renders only typed content parts (or fails on a string): every "
                   f"prompt would lose the question and the <image> token (lmms-eval then fails on the first image). "
                   f"Run it without --force_simple (the chat wrapper), or with --model {CAPABLE_MODEL}")


def class_path(model: object) -> str:
    cls = model if isinstance(model, type) else type(model)
    return f"{cls.__module__}.{cls.__qualname__}"


def unanswerable_conditions(model: object) -> dict[str, str]:
    """The document conditions (``EVERY_CONDITION`` for all) that lmms-eval model ``model`` cannot answer, and why."""
    if class_path(model) == _LLAVA_HF_SIMPLE and not isinstance(model, type) and _template_drops_text(model):
        return {EVERY_CONDITION: _DROPPED_PROMPT}
    return dict(KNOWN_CONDITION_FAILURES.get(class_path(model), {}))


def _template_drops_text(model: object, probe: str = "pathbind-probe-question") -> bool:
    """Whether the simple llava_hf wrapper's own prompt step (chat template over a plain-string message) loses it."""
    tokenizer = getattr(model, "tokenizer", None)
    template = getattr(model, "chat_template", None) or getattr(tokenizer, "chat_template", None)
    if tokenizer is None or template is None:  # the wrapper then uses its own Vicuna template, which keeps the text
        return False
    try:
        text = tokenizer.apply_chat_template([{"role": "user", "content": probe}], chat_template=template,
                                             tokenize=False, add_generation_prompt=True)
    except Exception:  # the wrapper's own call would fail the same way, on every document
        return True
    return probe not in text


def condition_reason(task: str, condition: str, why: str, model: str) -> str:
    """The message for ``task``'s documents under ``condition`` that ``model`` cannot answer."""
    if condition == EVERY_CONDITION:
        return f"task {task!r} is skipped for model {model}: {why}"
    label = CONDITION_LABELS.get(condition, condition)
    metrics = "acc_text and mg" if condition == "text" else f"acc_{condition} and drop_{condition}"
    return (f"task {task!r}: its {label} condition is skipped for model {model}, so {metrics} are missing (NaN): "
            f"{why}. --model {CAPABLE_MODEL} --model_args pretrained=<checkpoint> answers every condition for the "
            f"families it supports")


def drop_conditions(task_dict: Mapping[Any, Any], unanswerable: Mapping[str, str],
                    model: str) -> tuple[dict[Any, Any], dict[str, str], dict[str, dict[str, str]]]:
    """``task_dict`` without the documents whose ``condition`` ``model`` cannot answer (``unanswerable``: condition
    -> why), the tasks removed whole (every document, or ``EVERY_CONDITION``) and, per task, the conditions removed.

    The documents go from the task's datasets in place: lmms-eval's model reads them by index from the same objects.
    """
    kept: dict[Any, Any] = {}
    skipped_tasks: dict[str, str] = {}
    skipped_conditions: dict[str, dict[str, str]] = {}
    for key, value in task_dict.items():
        if isinstance(value, Mapping):
            subtasks, tasks, conditions = drop_conditions(value, unanswerable, model)
            skipped_tasks.update(tasks)
            skipped_conditions.update(conditions)
            if subtasks or not value:
                kept[key] = subtasks
            continue
        if EVERY_CONDITION in unanswerable:
            skipped_tasks[str(key)] = condition_reason(str(key), EVERY_CONDITION, unanswerable[EVERY_CONDITION], model)
            continue
        removed = {c: condition_reason(str(key), c, why, model) for c, why in unanswerable.items()
                   if _remove_documents(value, c)}
        if removed:
            skipped_conditions[str(key)] = removed
        if removed and not _has_documents(value):
            skipped_tasks[str(key)] = "; ".join(removed.values()) + " (the task has no other documents)"
        else:
            kept[key] = value
    return kept, skipped_tasks, skipped_conditions


def _datasets(task: object) -> list[Any]:
    """The task's split dictionaries (lmms-eval keeps a second one without the image columns)."""
    found = [getattr(task, name, None) for name in ("dataset", "dataset_no_image")]
    return [d for i, d in enumerate(found) if isinstance(d, dict) and all(d is not e for e in found[:i])]


def _remove_documents(task: object, condition: str) -> bool:
    """Remove ``task``'s documents under ``condition`` from each of its datasets; whether there were any."""
    removed = False
    for splits in _datasets(task):
        for split, docs in list(splits.items()):
            if "condition" not in getattr(docs, "column_names", ()):
                continue
            keep = [i for i, c in enumerate(docs["condition"]) if c != condition]
            if len(keep) < len(docs):
                splits[split] = docs.select(keep)
                removed = True
    return removed


def _has_documents(task: object) -> bool:
    return any(len(docs) for splits in _datasets(task) for docs in splits.values())
