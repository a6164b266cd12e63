"""PathBind task definitions for lmms-eval."""
