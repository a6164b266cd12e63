"""``pathbind_tiny``: a tiny Qwen2-VL trained on the synthetic demo, the real-transformer positive control."""
