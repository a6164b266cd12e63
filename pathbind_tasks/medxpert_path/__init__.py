"""MedXpert-Path: the pathology questions of MedXpertQA MM (Zuo et al. 2025), with and without the image."""
