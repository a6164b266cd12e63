"""Synthetic demo data: deterministic histology tiles and questions."""
