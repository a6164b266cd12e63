"""Audits of the data behind a benchmark: train/test leakage by slide (``leakage``), site and patient signal in
image features (``features``), near-duplicate images (``duplicates``)."""
