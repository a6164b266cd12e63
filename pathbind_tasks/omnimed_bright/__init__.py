"""OmniMed-Bright: the microscopy questions of OmniMedVQA (Hu et al. 2024), with and without the image."""
