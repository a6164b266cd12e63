"""How ``pathbind_hf`` places a checkpoint (device, device_map), passes processor options, and what a run records."""

from __future__ import annotations

import inspect
import json
import os
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Processor options that size images; their effective values are recorded with every run.
IMAGE_LIMIT_KEYS = ("size", "min_pixels", "max_pixels", "max_image_size", "do_image_splitting", "crop_size",
                    "do_center_crop", "crop_to_patches", "min_patches", "max_patches", "do_pan_and_scan",
                    "pan_and_scan_max_num_crops", "image_seq_len", "image_seq_length")
# Generation-config keys that never reach generate from the checkpoint: superseded by max_new_tokens, or metadata.
_NOT_APPLIED = {"max_length", "transformers_version", "_from_model_config"}


def parse_value(value: Any) -> Any:
    """A ``--model_args`` value: lmms-eval passes JSON objects and lists (``size={"longest_edge":728}``) as text."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{value!r} is not valid JSON: {exc}") from exc
    return value


def placement(device: str | None, device_map: Any) -> Any:
    """``from_pretrained``'s device_map: the given map (sharding), else ``device``; by default ``cuda:<LOCAL_RANK>``
    when CUDA is available and the CPU otherwise. ``device=cuda`` also means this process's GPU."""
    device_map = parse_value(device_map)
    if device_map is not None:
        if device is not None:
            raise ValueError(f"give device ({device!r}) or device_map ({device_map!r}), not both")
        return device_map
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    return str(torch.device(device))


def refuse_remote_code(pretrained: str, options: dict[str, Any]) -> None:
    """ValueError, before anything of the checkpoint is read, for ``trust_remote_code`` set true; a false one is
    dropped (it is transformers' default). PathBind reads the image-token layout, the view geometry and the
    attention of the model and processor classes transformers itself implements (``pathbind_models.hf.families``);
    a checkpoint's own code would run first and then be unknown to all three."""
    value = options.pop("trust_remote_code", False)
    if value in (False, None) or str(value).lower() in ("false", "0", ""):
        return
    from pathbind_models.hf.families import NAMES

    raise ValueError(f"{pretrained}: trust_remote_code={value} is refused before anything loads: pathbind_hf runs "
                     f"the model and processor classes transformers implements itself ({', '.join(NAMES)}), whose "
                     "image tokens and attention it knows, never a checkpoint's own code. Use the checkpoint's "
                     "transformers-native version (for InternVL the '-hf' checkpoints), or lmms-eval's own wrapper "
                     "for that model (its answers, without PathBind's attention tasks)")


def load_processor(pretrained: str, options: dict[str, Any]) -> Any:
    """``AutoProcessor.from_pretrained(pretrained, **options)``; ValueError for an option the processor does not
    know, which transformers would silently drop (e.g. ``max_pixels`` for Idefics3)."""
    from transformers import AutoProcessor

    options = {key: parse_value(value) for key, value in options.items()}
    processor = AutoProcessor.from_pretrained(pretrained, **options)
    known = option_names(processor)
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"{pretrained}: {type(processor).__name__} has no option {', '.join(map(repr, unknown))}; "
                         f"its options are {', '.join(sorted(known))}")
    return processor


def option_names(processor: Any) -> set[str]:
    """What ``from_pretrained`` hands on to the processor: its own constructor arguments and the keyword arguments
    its image processor declares (``valid_kwargs``), less the sub-processors themselves."""
    images = getattr(processor, "image_processor", None)
    declared = set(getattr(getattr(images, "valid_kwargs", None), "__annotations__", {}))
    own = set(inspect.signature(type(processor).__init__).parameters) - {"self", "kwargs", "chat_template"}
    return (declared | own) - set(processor.get_attributes()) - {"return_tensors", "device"}


def image_limits(processor: Any) -> dict[str, Any]:
    """The effective resize and tiling settings of ``processor`` (image processor first), as JSON values."""
    found: dict[str, Any] = {}
    for source in (processor, getattr(processor, "image_processor", None)):
        values = source.to_dict() if hasattr(source, "to_dict") else {}  # type: ignore[union-attr]
        found |= {key: to_json(values[key]) for key in IMAGE_LIMIT_KEYS if values.get(key) is not None}
    return found


def input_device(model: PreTrainedModel) -> torch.device:
    """Where inputs go: the input embedding's execution device. With a device_map its weights may be offloaded
    (``model.device`` is then ``meta``), and the first parameter can sit on another GPU than the embedding."""
    embeddings = model.get_input_embeddings()
    devices = _hook_devices(embeddings)
    return devices[0] if devices else next(embeddings.parameters()).device


def execution_devices(model: torch.nn.Module) -> set[torch.device]:
    """Every device the model computes on: its parameters' devices and accelerate's execution devices."""
    devices = {p.device for p in model.parameters() if p.device.type != "meta"}
    for module in model.modules():
        devices.update(_hook_devices(module))
    return devices


def free_memory(devices: set[torch.device]) -> int:
    """Bytes free on the fullest of ``devices`` (GPU memory, or available RAM for the CPU)."""
    free = []
    for device in devices:
        if device.type == "cuda":
            free.append(torch.cuda.mem_get_info(device)[0])
        else:
            import psutil

            free.append(psutil.virtual_memory().available)
    return min(free)


def checkpoint_generation(generation_config: Any, overridden: set[str]) -> dict[str, Any]:
    """The settings of the checkpoint's ``generation_config.json`` that still reach ``generate``: those that differ
    from transformers' defaults and that PathBind's options do not override (e.g. ``repetition_penalty``)."""
    values = generation_config.to_diff_dict()
    return {key: to_json(value) for key, value in sorted(values.items())
            if key not in overridden and key not in _NOT_APPLIED}


def _hook_devices(module: torch.nn.Module) -> list[torch.device]:
    hook = getattr(module, "_hf_hook", None)
    hooks = getattr(hook, "hooks", [hook]) if hook is not None else []  # SequentialHook holds several
    found = [getattr(h, "execution_device", None) for h in hooks]
    return [torch.device(d) for d in found if d is not None]


def to_json(value: Any) -> Any:
    """``value`` with mappings, sequences and anything else (enums, dtypes) made JSON-serialisable."""
    if hasattr(value, "items"):
        return {str(k): to_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value if isinstance(value, bool | int | float | str) or value is None else str(value)
