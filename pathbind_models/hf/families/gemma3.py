"""Gemma3: one square view of pooled image tokens; no documented box frame; its chat template."""

from __future__ import annotations

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


FAMILY = ModelFamily("gemma3", ("gemma3",), square_layout, None, ImageGrid(8, 8))
