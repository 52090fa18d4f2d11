"""Data ablations: identical small models trained on corpus variants, compared in held-out bits per byte.

This package sits above the build, the tokenizer and the trainers (it runs all three) and below the CLI.
"""
