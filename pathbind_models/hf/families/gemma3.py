"""Gemma3: one square view of pooled image tokens; no documented box frame; its tiny checkpoint."""

from __future__ import annotations

from typing import Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.llava import square_layout

TEMPLATE = (  # the family's own chat template
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<start_of_turn>' + role + '\n' }}{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for item in message['content'] %}{% if item['type'] == 'image' %}{{ '<start_of_image>' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import Gemma3Config, Gemma3ImageProcessor, Gemma3Processor, GemmaTokenizer

    from pathbind_models.hf.tiny_parts import VISION, finish, learn_bpe, text_config

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>", *named.values()]
    vocab, merges = learn_bpe(specials, metaspace="never")
    tokenizer = finish(GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, extra_special_tokens=named),
                       specials)
    # SigLIP at 224 px with patches of 14 → 16×16, average-pooled 2×2 to 64 = 8×8 soft tokens.
    processor = Gemma3Processor(image_processor=Gemma3ImageProcessor(size={"height": 224, "width": 224}),
                                tokenizer=tokenizer, image_seq_length=64, chat_template=TEMPLATE)
    vision = {"model_type": "siglip_vision_model", **VISION, "image_size": 224, "patch_size": 14,
              "vision_use_head": False}
    text = text_config(tokenizer, "gemma3_text", head_dim=16, query_pre_attn_scalar=16, sliding_window=512)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=64,
                          boi_token_index=tokenizer.boi_token_id, eoi_token_index=tokenizer.eoi_token_id,
                          image_token_index=tokenizer.image_token_id)
    return _model, config, processor


def _model(config: Any) -> Any:
    """Gemma3 initialises its image projection to zeros: image tokens would then carry no signal at all."""
    import torch
    from transformers import Gemma3ForConditionalGeneration

    model = Gemma3ForConditionalGeneration(config)
    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, config.initializer_range)
    return model


FAMILY = ModelFamily("gemma3", ("gemma3",), square_layout, None, build_tiny, ImageGrid(8, 8))
