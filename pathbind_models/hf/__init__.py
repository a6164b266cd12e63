"""Hugging Face vision-language models as PathBind adapters (generation, attention probe, option scores)."""
