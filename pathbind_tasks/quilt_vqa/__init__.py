"""Quilt-VQA (Seyfioglu et al. 2024): the closed-ended yes/no questions, with and without the image."""
