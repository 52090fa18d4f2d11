"""A small built-in-sample corpus and its build config, shared by the end-to-end build tests."""
from corpusforge.pipeline.sample import write_sample


def sample_corpus(root, documents: int):
    """Write ``documents`` sample records under ``root`` and a config reading them; returns (root, config)."""
    sample = write_sample(root / "sample", documents=documents)
    config = root / "corpus.yaml"
    inputs = "".join(f"  - {{path: '{i['path']}', name: {i['name']}}}\n" for i in sample.inputs)
    config.write_text(f"inputs:\n{inputs}output:\n  shard_target_mb: 0.05\n  max_doc_chars: 200000\n")
    return root, config
