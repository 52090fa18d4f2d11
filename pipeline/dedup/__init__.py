"""Deduplication: exact, line-level and MinHash LSH near-duplicates, and decontamination."""
