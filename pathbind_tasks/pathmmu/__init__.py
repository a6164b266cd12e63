"""PathMMU (Sun et al. 2024): expert-validated pathology MCQ, test-tiny and test-all, with and without the image."""
