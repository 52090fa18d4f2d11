"""Labelled data for the quality benchmarks: real prose as good, realistic generated junk as bad."""
