"""corpusforge's build pipeline: Apache Beam stages that turn raw text into clean Arrow shards."""

__version__ = "0.1.0"
