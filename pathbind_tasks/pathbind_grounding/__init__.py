"""PathBind-Grounding: 500 expert-curated PathVG items (380 testA, 120 testB) for attention grounding."""
