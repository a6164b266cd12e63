"""PathBind reference models and controls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathbind_models.hf.adapter import HFAdapter


def load_adapter(pretrained: str, **kwargs: Any) -> HFAdapter:
    """A Hugging Face checkpoint (hub id or local folder) as an adapter: ``generate``, ``option_logprobs`` and
    ``entity_attention``. Keyword arguments: ``dtype``, ``device``, ``device_map``, ``offload_folder``,
    ``max_new_tokens``, ``thinking``, ``occlusion_batch``, and the processor's own options (``max_pixels``, ...)."""
    from pathbind_models.hf.adapter import HFAdapter

    return HFAdapter(pretrained, **kwargs)


__all__ = ["load_adapter"]
