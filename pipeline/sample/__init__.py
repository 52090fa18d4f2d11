"""The built-in sample corpus: real text that ships inside Python itself, mixed with the problems a real
corpus has (duplicates, near-duplicates, personal data, junk, other languages, bad records)."""

from corpusforge.pipeline.sample.generate import SampleSummary, write_sample

__all__ = ["SampleSummary", "write_sample"]
