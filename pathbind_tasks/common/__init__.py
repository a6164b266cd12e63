"""Behaviour shared by every PathBind benchmark: conditions, prompts, scoring and the metrics they report."""
