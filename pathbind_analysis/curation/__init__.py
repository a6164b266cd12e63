"""Benchmark curation from lmms-eval sample logs: the text-only consensus filter and reviewer agreement."""
