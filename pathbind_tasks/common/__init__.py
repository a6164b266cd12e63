"""Behaviour shared by every PathBind benchmark: conditions, prompts, scoring."""
