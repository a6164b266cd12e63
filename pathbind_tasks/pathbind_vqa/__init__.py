"""PathBind-VQA and PathBind-PTA: the gated PathBind MCQ sets by diagnostic dimension, with and without the image."""
