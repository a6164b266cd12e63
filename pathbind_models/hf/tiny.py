"""Tiny random models of real VLM architectures, saved like hub checkpoints, for fast offline tests."""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

# transformers (and so torch) is imported inside the builders: listing FAMILIES for `pathbind --help` stays cheap.

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava", "internvl", "gemma3", "idefics3", "smolvlm")

# Six decoder layers split into shallow/middle/deep thirds of two; 4 query heads share 2 KV heads (GQA).
TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 6, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 4096}
VISION = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}

ROLES = ("system", "user", "assistant", "model", "USER", "ASSISTANT", "User", "Assistant")
CORPUS = (
    "Look at the image and locate: nuclei with prominent nucleoli.",
    "Look at the image and locate: the mitotic figure in the centre of the field.",
    "Look at the image and locate: tumour cells infiltrating the stroma.",
    "Look at the image and locate: lymphocytes clustered around the blood vessel at the top left.",
    "The section shows glands lined by columnar epithelium with crowded, hyperchromatic nuclei.",
    "Large pleomorphic nuclei with prominent nucleoli and coarse chromatin are seen in the upper right.",
    "There is a dense lymphocytic infiltrate in the lower part of the image, next to the necrosis.",
    "The tumour cells form nests and cords separated by fibrous stroma with scattered fibroblasts.",
    "Mitotic figures are frequent, including an atypical mitosis near the centre.",
    "Keratin pearls and intercellular bridges indicate squamous differentiation.",
    "The biopsy shows normal colonic mucosa with goblet cells and intact crypts.",
    "Haematoxylin stains nuclei blue and eosin stains the cytoplasm and collagen pink.",
    "Immunohistochemistry shows strong nuclear staining for the oestrogen receptor in most tumour cells.",
    "Membranous HER2 staining is complete and intense in more than ten percent of the invasive cells.",
    "The Ki-67 index is high, with many positive nuclei in the hot spot.",
    "Small round blue cells with scant cytoplasm surround a small vessel.",
    "Caseating granulomas with multinucleated giant cells and epithelioid histiocytes are present.",
    "The liver shows macrovesicular steatosis, ballooned hepatocytes and portal inflammation.",
    "Renal glomeruli appear normal; the tubules show focal atrophy and interstitial fibrosis.",
    "Adipose tissue, skeletal muscle and a peripheral nerve are seen at the edge of the specimen.",
    "An arrow points to a signet ring cell with mucin pushing the nucleus to the side.",
    "The scale bar at the bottom right measures fifty micrometres.",
    "Which organ is this tissue from? Answer with the letter of the best option.",
    "Is there invasion of the basement membrane? Answer yes or no.",
    "Question: what is the most likely diagnosis? Options: A) adenocarcinoma B) lymphoma C) melanoma D) sarcoma.",
    "Answer: A. The glands are irregular and the cells are malignant.",
    "You are a pathology expert. Describe what you see in the image, then reason step by step.",
    "You are a helpful assistant. The user asks a question and the assistant answers it.",
    # chat-template role words, after a space and at the start of a turn, so that they become whole tokens
    *(" ".join(ROLES),) * 4,
    *ROLES * 4,
    "The region in the left half of the image contains more cells than the right half.",
    "Count the number of nuclei inside the box and estimate the area covered by tumour.",
    "Is the field of view too small to tell the organ? Then say that it cannot be determined.",
    "Spatial relation: the nearest structure to the gland is a blood vessel with red blood cells.",
    "Density is highest in the top right quadrant and lowest in the bottom left quadrant.",
    "0 1 2 3 4 5 6 7 8 9 10 20 50 100 percent %, ( ) [ ] : ; ! ? . - / <answer> </answer> <think> </think>",
)


@dataclass(frozen=True)
class ImageGrid:
    """How one 224×224 image reaches the decoder: grids of ``rows``×``cols`` image tokens, one per crop.

    ``tiles`` is the arrangement of local crops (row-major), ``global_view`` a downscaled whole image after them.
    """

    rows: int
    cols: int
    tiles: tuple[int, int] = (1, 1)
    global_view: bool = False

    @property
    def num_grids(self) -> int:
        return self.tiles[0] * self.tiles[1] + int(self.global_view)

    @property
    def num_tokens(self) -> int:
        return self.rows * self.cols * self.num_grids

    def describe(self) -> str:
        grid = f"{self.rows}×{self.cols} image tokens"
        if self.num_grids == 1:
            return f"{grid} ({self.num_tokens})"
        crops = f"{self.tiles[0]}×{self.tiles[1]} tiles" + (" + a global image" if self.global_view else "")
        return f"{crops}, each {grid} ({self.num_tokens} in all)"


@dataclass(frozen=True)
class _Family:
    build: Callable[[], tuple[Any, Any, Any]]  # () -> (model class, config, processor)
    grid: ImageGrid


def make_tiny_model(family: str, out_dir: Path, seed: int = 0) -> Path:
    """Write a randomly initialised tiny ``family`` model, its tokenizer and processor to ``out_dir``.

    The folder loads with ``AutoProcessor``/``AutoModelForImageTextToText.from_pretrained`` offline, like a hub
    checkpoint; the same seed gives the same weights.
    """
    import torch

    spec = _family(family)
    model_class, config, processor = spec.build()
    torch.manual_seed(seed)
    model = model_class(config)
    if family == "gemma3":
        _init_gemma3_projection(model, config.initializer_range)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def image_grid(family: str) -> ImageGrid:
    """The image-token layout a tiny ``family`` model's processor gives a 224×224 image."""
    return _family(family).grid


def _family(name: str) -> _Family:
    if name not in _FAMILIES:
        raise ValueError(f"unknown tiny model family {name!r}; supported families: {', '.join(FAMILIES)}")
    return _FAMILIES[name]


def _init_gemma3_projection(model: Any, std: float) -> None:
    # Gemma3 initialises its image projection to zeros: image tokens would then carry no signal at all.
    import torch

    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, std)


# --- tokenizers -----------------------------------------------------------------------------------------------


def _learn_bpe(specials: list[str], *, metaspace: str | None = None, vocab_size: int = 1024) -> tuple[dict, list]:
    """Train BPE on the corpus: byte-level (GPT-2/Qwen/Llama-3) or, given a ``metaspace`` prepend scheme, ``▁word``
    pieces with byte fallback (Llama-2 prepends ``▁`` to the first word: "first"; Gemma does not: "never")."""
    bpe = Tokenizer(models.BPE())
    if metaspace:
        bpe.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=metaspace)
        alphabet = [*string.printable.strip(), "▁"]
    else:
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, initial_alphabet=alphabet,
                                  show_progress=False)
    bpe.train_from_iterator(CORPUS, trainer)
    trained = json.loads(bpe.to_str())["model"]
    vocab, merges = trained["vocab"], [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                                       for m in trained["merges"]]
    if metaspace:  # byte fallback pieces, as in SentencePiece vocabularies: no character is ever unknown
        vocab.update({f"<0x{b:02X}>": len(vocab) + b for b in range(256)})
    return vocab, merges


def _byte_level_backend(specials: list[str]) -> Tokenizer:
    vocab, merges = _learn_bpe(specials)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    return backend


def _llama2_backend(specials: list[str]) -> Tokenizer:
    """SentencePiece-style BPE as in Llama-2/Vicuna's tokenizer.json (what LLaVA-1.5 ships)."""
    vocab, merges = _learn_bpe(specials, metaspace="first")
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    return backend


def _finish(tokenizer: Any, specials: list[str]) -> Any:
    # Added tokens are matched before normalisation and pre-tokenisation, so an <image> is never split.
    tokenizer.add_tokens([AddedToken(s, special=True, normalized=False) for s in specials], special_tokens=True)
    return tokenizer


def _qwen_tokenizer(specials: list[str], **named: str) -> Any:
    from transformers import Qwen2Tokenizer

    vocab, merges = _learn_bpe(specials)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", extra_special_tokens=named)
    return _finish(tokenizer, specials)


def _backend_tokenizer(backend: Tokenizer, specials: list[str], **named: Any) -> Any:
    from transformers import TokenizersBackend

    return _finish(TokenizersBackend(tokenizer_object=backend, **named), specials)


# --- chat templates (the families' own, trimmed of tool calling and video options) ------------------------------

QWEN_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN3_TEMPLATE = QWEN_TEMPLATE.replace(
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}", "")  # Qwen3-VL has no default system prompt
LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' ' }}"
    "{% endfor %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
INTERNVL_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}{{ '<IMG_CONTEXT>\n' }}{% elif content['type'] == 'video' %}"
    "{{ '<video>\n' }}{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
GEMMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<start_of_turn>' + role + '\n' }}{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for item in message['content'] %}{% if item['type'] == 'image' %}{{ '<start_of_image>' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)
IDEFICS3_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
SMOLVLM_TEMPLATE = IDEFICS3_TEMPLATE.replace("<|begin_of_text|>", "<|im_start|>")


# --- families --------------------------------------------------------------------------------------------------

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
IDEFICS_SPECIALS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>",
                    *(f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7))]


def _text_config(tokenizer: Any, model_type: str, **extra: Any) -> dict[str, Any]:
    return {"model_type": model_type, "vocab_size": len(tokenizer), **TEXT, "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, **extra}


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
                                QWEN_TEMPLATE)
    vision = {"depth": 2, "embed_dim": 32, "hidden_size": TEXT["hidden_size"], "num_heads": 2, "mlp_ratio": 2}
    config = Qwen2VLConfig(text_config=_text_config(tokenizer, "qwen2_vl_text", **_qwen_rope("qwen2_vl_text")),
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
                                QWEN_TEMPLATE)
    # window_size 112 px = 4×4 merged tokens: the 8×8 grid has 4 attention windows; block 1 attends globally.
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "window_size": 112,
              "out_hidden_size": TEXT["hidden_size"], "fullatt_block_indexes": [1]}
    config = Qwen2_5_VLConfig(text_config=_text_config(tokenizer, "qwen2_5_vl_text", **_qwen_rope("qwen2_5_vl_text")),
                              vision_config=vision, **_qwen_ids(tokenizer))
    return Qwen2_5_VLForConditionalGeneration, config, processor


def _qwen3_vl() -> tuple[Any, Any, Any]:
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor, Qwen3VLVideoProcessor

    tokenizer = _qwen_tokenizer(QWEN_SPECIALS, image_token="<|image_pad|>", video_token="<|video_pad|>")
    # Patches of 16 merged 2×2: factor 32. The real min_pixels 256² upscales a 224×224 image to 256 → 8×8 tokens;
    # max_pixels = min_pixels keeps every image at about that size.
    processor = _qwen_processor(Qwen3VLProcessor, Qwen3VLVideoProcessor, tokenizer, 16, 256 * 256, 256 * 256,
                                QWEN3_TEMPLATE)
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 16,
              "out_hidden_size": TEXT["hidden_size"], "num_position_embeddings": 64, "deepstack_visual_indexes": [0]}
    text = _text_config(tokenizer, "qwen3_vl_text", head_dim=16, **_qwen_rope("qwen3_vl_text"))
    config = Qwen3VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tokenizer))
    return Qwen3VLForConditionalGeneration, config, processor


def _llava() -> tuple[Any, Any, Any]:
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    specials = ["<unk>", "<s>", "</s>", "<image>", "<pad>"]
    tokenizer = _backend_tokenizer(_llama2_backend(specials), specials, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>", pad_token="<pad>", image_token="<image>", add_bos_token=True)
    # CLIP at 224 px with patches of 28: an 8×8 grid (+ CLS, dropped by the "default" feature strategy).
    images = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    processor = LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=28,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=LLAVA_TEMPLATE)
    vision = {"model_type": "clip_vision_model", **VISION, "image_size": 224, "patch_size": 28, "projection_dim": 32}
    config = LlavaConfig(vision_config=vision, text_config=_text_config(tokenizer, "llama"),
                         image_token_index=tokenizer.image_token_id, image_seq_length=64)
    return LlavaForConditionalGeneration, config, processor


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
                                  chat_template=INTERNVL_TEMPLATE)
    vision = {**VISION, "image_size": 224, "patch_size": 14}
    config = InternVLConfig(vision_config=vision, text_config=_text_config(tokenizer, "qwen2"),
                            image_token_id=tokenizer.context_image_token_id, image_seq_length=64)
    return InternVLForConditionalGeneration, config, processor


def _gemma3() -> tuple[Any, Any, Any]:
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
        GemmaTokenizer,
    )

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>", *named.values()]
    vocab, merges = _learn_bpe(specials, metaspace="never")
    tokenizer = _finish(GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, extra_special_tokens=named),
                        specials)
    # SigLIP at 224 px with patches of 14 → 16×16, average-pooled 2×2 to 64 = 8×8 soft tokens.
    processor = Gemma3Processor(image_processor=Gemma3ImageProcessor(size={"height": 224, "width": 224}),
                                tokenizer=tokenizer, image_seq_length=64, chat_template=GEMMA3_TEMPLATE)
    vision = {"model_type": "siglip_vision_model", **VISION, "image_size": 224, "patch_size": 14,
              "vision_use_head": False}
    text = _text_config(tokenizer, "gemma3_text", head_dim=16, query_pre_attn_scalar=16, sliding_window=512)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=64,
                          boi_token_index=tokenizer.boi_token_id, eoi_token_index=tokenizer.eoi_token_id,
                          image_token_index=tokenizer.image_token_id)
    return Gemma3ForConditionalGeneration, config, processor


def _idefics3() -> tuple[Any, Any, Any]:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    specials = ["<|begin_of_text|>", "<|end_of_text|>", *IDEFICS_SPECIALS]
    tokenizer = _backend_tokenizer(_byte_level_backend(specials), specials, bos_token="<|begin_of_text|>",
                                   eos_token="<end_of_utterance>", pad_token="<|end_of_text|>", add_bos_token=True)
    # Real default: longest edge resized to 4 tiles of 364 (a 224 image becomes 4×4 tiles + global). Tiny: tiles of
    # 112 and a longest edge of 224 → 2×2 tiles + global; patches of 14 → 8×8, pixel shuffle 2 → 4×4 tokens each.
    images = Idefics3ImageProcessor(size={"longest_edge": 224}, max_image_size={"longest_edge": 112})
    processor = Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=16,
                                  chat_template=IDEFICS3_TEMPLATE)
    vision = {**VISION, "image_size": 112, "patch_size": 14}
    config = Idefics3Config(vision_config=vision, text_config=_text_config(tokenizer, "llama"), scale_factor=2,
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
    tokenizer = _backend_tokenizer(_byte_level_backend(specials), specials, bos_token="<|im_start|>",
                                   eos_token="<end_of_utterance>", pad_token="<|endoftext|>", **named)
    # As Idefics3 (tiles of 112, 2×2 + global for 224 px) with SmolVLM's pixel shuffle 4: patches of 7 → 16×16 → 4×4.
    size, tile = {"longest_edge": 224}, {"longest_edge": 112}
    processor = SmolVLMProcessor(image_processor=SmolVLMImageProcessor(size=size, max_image_size=tile),
                                 tokenizer=tokenizer, video_processor=SmolVLMVideoProcessor(size=size,
                                                                                            max_image_size=tile),
                                 image_seq_len=16, chat_template=SMOLVLM_TEMPLATE)
    vision = {**VISION, "image_size": 112, "patch_size": 7}
    config = SmolVLMConfig(vision_config=vision, text_config=_text_config(tokenizer, "llama"), scale_factor=4,
                           image_token_id=tokenizer.image_token_id)
    return SmolVLMForConditionalGeneration, config, processor


_FAMILIES: dict[str, _Family] = {
    "qwen2_vl": _Family(_qwen2_vl, ImageGrid(8, 8)),
    "qwen2_5_vl": _Family(_qwen2_5_vl, ImageGrid(8, 8)),
    "qwen3_vl": _Family(_qwen3_vl, ImageGrid(8, 8)),
    "llava": _Family(_llava, ImageGrid(8, 8)),
    "internvl": _Family(_internvl, ImageGrid(8, 8)),
    "gemma3": _Family(_gemma3, ImageGrid(8, 8)),
    "idefics3": _Family(_idefics3, ImageGrid(4, 4, tiles=(2, 2), global_view=True)),
    "smolvlm": _Family(_smolvlm, ImageGrid(4, 4, tiles=(2, 2), global_view=True)),
}
