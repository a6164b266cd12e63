"""The public pathology VQA benchmarks PathBind-VQA was drawn from, evaluated raw: shared conversion helpers."""
