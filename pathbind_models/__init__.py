"""PathBind reference models and controls."""
