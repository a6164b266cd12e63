"""Tiny random checkpoints of every model family (``pathbind make-tiny-model``), saved like hub ones, for tests.

One builder per family of the registry, by name (``BUILDERS``); each uses its family module's chat template, and
the module states the image-token grid the builder's processor gives (``image_grid``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pathbind_models.hf.families import FAMILIES, NAMES, gemma3, idefics3, internvl, llava, qwen2_vl, qwen3_vl, smolvlm
from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.tiny_parts import (
    TEXT,
    VISION,
    backend_tokenizer,
    byte_level_backend,
    finish,
    learn_bpe,
    llama2_backend,
    text_config,
)

# transformers (and so torch) is imported inside the builders: `pathbind make-tiny-model --help` stays fast.

# () -> (model from its config, config, processor) of a tiny random checkpoint
TinyBuild = Callable[[], tuple[Callable[[Any], Any], Any, Any]]


def make_tiny_model(family: str, out_dir: Path, seed: int = 0) -> Path:
    """Write a randomly initialised tiny ``family`` model, its tokenizer and processor to ``out_dir``.

    The folder loads with ``AutoProcessor``/``AutoModelForImageTextToText.from_pretrained`` offline, like a hub
    checkpoint; the same seed gives the same weights.
    """
    import torch

    make_model, config, processor = build_tiny(family)
    torch.manual_seed(seed)
    model = make_model(config)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def build_tiny(family: str) -> tuple[Callable[[Any], Any], Any, Any]:
    """(model from its config, config, processor) of a tiny random ``family`` checkpoint."""
    return BUILDERS[_family(family).name]()


def image_grid(family: str) -> ImageGrid:
    """The image-token layout a tiny ``family`` model's processor gives a 224×224 image."""
    return _family(family).tiny_grid


def _family(name: str) -> ModelFamily:
    found = [family for family in FAMILIES if family.name == name]
    if not found:
        raise ValueError(f"unknown tiny model family {name!r}; supported families: {', '.join(NAMES)}")
    return found[0]


# --- Qwen2-VL, Qwen2.5-VL, Qwen3-VL and InternVL ------------------------------------------------------------------

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]


def _qwen_tokenizer(specials: list[str], **named: str) -> Any:
    from transformers import Qwen2Tokenizer

    vocab, merges = learn_bpe(specials)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", extra_special_tokens=named)
    return finish(tokenizer, specials)


def _qwen_ids(tokenizer: Any) -> dict[str, Any]:
    ids = tokenizer.convert_tokens_to_ids
    return {"image_token_id": ids("<|image_pad|>"), "video_token_id": ids("<|video_pad|>"),
            "vision_start_token_id": ids("<|vision_start|>"), "vision_end_token_id": ids("<|vision_end|>")}


def _qwen_rope(model_type: str) -> dict[str, Any]:
    # mrope_section splits head_dim/2 rotary frequencies into (time, height, width); the real [16, 24, 24] or
    # [24, 20, 20] assume head_dim 128 and must be rescaled to the tiny head_dim 16 (sum 8).
    rope = {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [2, 3, 3]}
    return {"rope_parameters": {**rope, "mrope_interleaved": True} if model_type == "qwen3_vl_text" else rope}


def _qwen_processor(processor_class: Any, video_class: Any, tokenizer: Any, patch_size: int, min_pixels: int,
                    max_pixels: int, template: str) -> Any:
    from transformers import Qwen2VLImageProcessor

    images = Qwen2VLImageProcessor(patch_size=patch_size, min_pixels=min_pixels, max_pixels=max_pixels)
    return processor_class(image_processor=images, tokenizer=tokenizer,
                           video_processor=video_class(patch_size=patch_size), chat_template=template)


def _qwen2_vl() -> tuple[Any, Any, Any]:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor, Qwen2VLVideoProcessor

    tokenizer = _qwen_tokenizer(QWEN_SPECIALS, image_token="<|image_pad|>", video_token="<|video_pad|>")
    # max_pixels = 224²: a 224×224 image is 16×16 patches of 14 → 8×8 tokens after the 2×2 merge; larger ones shrink.
    processor = _qwen_processor(Qwen2VLProcessor, Qwen2VLVideoProcessor, tokenizer, 14, 56 * 56, 224 * 224,
                                qwen2_vl.QWEN_TEMPLATE)
    vision = {"depth": 2, "embed_dim": 32, "hidden_size": TEXT["hidden_size"], "num_heads": 2, "mlp_ratio": 2}
    config = Qwen2VLConfig(text_config=text_config(tokenizer, "qwen2_vl_text", **_qwen_rope("qwen2_vl_text")),
                           vision_config=vision, **_qwen_ids(tokenizer))
    return Qwen2VLForConditionalGeneration, config, processor


def _qwen2_5_vl() -> tuple[Any, Any, Any]:
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLVideoProcessor,
    )

    tokenizer = _qwen_tokenizer(QWEN_SPECIALS, image_token="<|image_pad|>", video_token="<|video_pad|>")
    processor = _qwen_processor(Qwen2_5_VLProcessor, Qwen2VLVideoProcessor, tokenizer, 14, 56 * 56, 224 * 224,
                                qwen2_vl.QWEN_TEMPLATE)
    # window_size 112 px = 4×4 merged tokens: the 8×8 grid has 4 attention windows; block 1 attends globally.
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "window_size": 112,
              "out_hidden_size": TEXT["hidden_size"], "fullatt_block_indexes": [1]}
    config = Qwen2_5_VLConfig(text_config=text_config(tokenizer, "qwen2_5_vl_text", **_qwen_rope("qwen2_5_vl_text")),
                              vision_config=vision, **_qwen_ids(tokenizer))
    return Qwen2_5_VLForConditionalGeneration, config, processor


def _qwen3_vl() -> tuple[Any, Any, Any]:
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor, Qwen3VLVideoProcessor

    tokenizer = _qwen_tokenizer(QWEN_SPECIALS, image_token="<|image_pad|>", video_token="<|video_pad|>")
    # Patches of 16 merged 2×2: factor 32. The real min_pixels 256² upscales a 224×224 image to 256 → 8×8 tokens;
    # max_pixels = min_pixels keeps every image at about that size.
    processor = _qwen_processor(Qwen3VLProcessor, Qwen3VLVideoProcessor, tokenizer, 16, 256 * 256, 256 * 256,
                                qwen3_vl.QWEN3_TEMPLATE)
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 16,
              "out_hidden_size": TEXT["hidden_size"], "num_position_embeddings": 64, "deepstack_visual_indexes": [0]}
    text = text_config(tokenizer, "qwen3_vl_text", head_dim=16, **_qwen_rope("qwen3_vl_text"))
    config = Qwen3VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tokenizer))
    return Qwen3VLForConditionalGeneration, config, processor


def _internvl() -> tuple[Any, Any, Any]:
    from transformers import (
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        InternVLVideoProcessor,
    )

    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
             "video_token": "<video>"}
    tokenizer = _qwen_tokenizer(QWEN_SPECIALS[:3] + list(named.values()), **named)
    # 224 px tiles, patches of 14 → 16×16, pixel shuffle 0.5 → 8×8 tokens per tile. The processor crops to tiles by
    # default; a square image keeps one tile (no thumbnail), other aspect ratios get several tiles + a thumbnail.
    size = {"height": 224, "width": 224}
    processor = InternVLProcessor(image_processor=GotOcr2ImageProcessor(size=size), tokenizer=tokenizer,
                                  video_processor=InternVLVideoProcessor(size=size), image_seq_length=64,
                                  chat_template=internvl.TEMPLATE)
    vision = {**VISION, "image_size": 224, "patch_size": 14}
    config = InternVLConfig(vision_config=vision, text_config=text_config(tokenizer, "qwen2"),
                            image_token_id=tokenizer.context_image_token_id, image_seq_length=64)
    return InternVLForConditionalGeneration, config, processor


# --- LLaVA-1.5 and Gemma3 --------------------------------------------------------------------------------------------


def _llava() -> tuple[Any, Any, Any]:
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    specials = ["<unk>", "<s>", "</s>", "<image>", "<pad>"]
    tokenizer = backend_tokenizer(llama2_backend(specials), specials, unk_token="<unk>", bos_token="<s>",
                                  eos_token="</s>", pad_token="<pad>", image_token="<image>", add_bos_token=True)
    # CLIP at 224 px with patches of 28: an 8×8 grid (+ CLS, dropped by the "default" feature strategy).
    images = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    processor = LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=28,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=llava.TEMPLATE)
    vision = {"model_type": "clip_vision_model", **VISION, "image_size": 224, "patch_size": 28, "projection_dim": 32}
    config = LlavaConfig(vision_config=vision, text_config=text_config(tokenizer, "llama"),
                         image_token_index=tokenizer.image_token_id, image_seq_length=64)
    return LlavaForConditionalGeneration, config, processor


def _gemma3() -> tuple[Any, Any, Any]:
    from transformers import Gemma3Config, Gemma3ImageProcessor, Gemma3Processor, GemmaTokenizer

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>", *named.values()]
    vocab, merges = learn_bpe(specials, metaspace="never")
    tokenizer = finish(GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, extra_special_tokens=named),
                       specials)
    # SigLIP at 224 px with patches of 14 → 16×16, average-pooled 2×2 to 64 = 8×8 soft tokens.
    processor = Gemma3Processor(image_processor=Gemma3ImageProcessor(size={"height": 224, "width": 224}),
                                tokenizer=tokenizer, image_seq_length=64, chat_template=gemma3.TEMPLATE)
    vision = {"model_type": "siglip_vision_model", **VISION, "image_size": 224, "patch_size": 14,
              "vision_use_head": False}
    text = text_config(tokenizer, "gemma3_text", head_dim=16, query_pre_attn_scalar=16, sliding_window=512)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=64,
                          boi_token_index=tokenizer.boi_token_id, eoi_token_index=tokenizer.eoi_token_id,
                          image_token_index=tokenizer.image_token_id)
    return _gemma3_model, config, processor


def _gemma3_model(config: Any) -> Any:
    """Gemma3 initialises its image projection to zeros: image tokens would then carry no signal at all."""
    import torch
    from transformers import Gemma3ForConditionalGeneration

    model = Gemma3ForConditionalGeneration(config)
    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, config.initializer_range)
    return model


# --- Idefics3 and SmolVLM ------------------------------------------------------------------------------------------

IDEFICS_SPECIALS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>",
                    *(f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7))]


def _idefics3() -> tuple[Any, Any, Any]:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    specials = ["<|begin_of_text|>", "<|end_of_text|>", *IDEFICS_SPECIALS]
    tokenizer = backend_tokenizer(byte_level_backend(specials), specials, bos_token="<|begin_of_text|>",
                                  eos_token="<end_of_utterance>", pad_token="<|end_of_text|>", add_bos_token=True)
    # Real default: longest edge resized to 4 tiles of 364 (a 224 image becomes 4×4 tiles + global). Tiny: tiles of
    # 112 and a longest edge of 224 → 2×2 tiles + global; patches of 14 → 8×8, pixel shuffle 2 → 4×4 tokens each.
    images = Idefics3ImageProcessor(size={"longest_edge": 224}, max_image_size={"longest_edge": 112})
    processor = Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=16,
                                  chat_template=idefics3.IDEFICS3_TEMPLATE)
    vision = {**VISION, "image_size": 112, "patch_size": 14}
    config = Idefics3Config(vision_config=vision, text_config=text_config(tokenizer, "llama"), scale_factor=2,
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    return Idefics3ForConditionalGeneration, config, processor


def _smolvlm() -> tuple[Any, Any, Any]:
    from transformers import (
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<video>", *IDEFICS_SPECIALS]
    named = {"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
             "end_of_utterance_token": "<end_of_utterance>", "global_image_token": "<global-img>"}
    tokenizer = backend_tokenizer(byte_level_backend(specials), specials, bos_token="<|im_start|>",
                                  eos_token="<end_of_utterance>", pad_token="<|endoftext|>", **named)
    # As Idefics3 (tiles of 112, 2×2 + global for 224 px) with SmolVLM's pixel shuffle 4: patches of 7 → 16×16 → 4×4.
    size, tile = {"longest_edge": 224}, {"longest_edge": 112}
    processor = SmolVLMProcessor(image_processor=SmolVLMImageProcessor(size=size, max_image_size=tile),
                                 tokenizer=tokenizer, video_processor=SmolVLMVideoProcessor(size=size,
                                                                                            max_image_size=tile),
                                 image_seq_len=16, chat_template=smolvlm.TEMPLATE)
    vision = {**VISION, "image_size": 112, "patch_size": 7}
    config = SmolVLMConfig(vision_config=vision, text_config=text_config(tokenizer, "llama"), scale_factor=4,
                           image_token_id=tokenizer.image_token_id)
    return SmolVLMForConditionalGeneration, config, processor


BUILDERS: dict[str, TinyBuild] = {"qwen2_vl": _qwen2_vl, "qwen2_5_vl": _qwen2_5_vl, "qwen3_vl": _qwen3_vl,
                                  "llava": _llava, "internvl": _internvl, "gemma3": _gemma3, "idefics3": _idefics3,
                                  "smolvlm": _smolvlm}
