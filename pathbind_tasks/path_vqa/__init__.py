"""Path-VQA (He et al. 2020): the yes/no questions, with and without the image."""
