"""ELMo vectors of text: every token's representation from a trained biLM (objective bilm), written to Arrow.

    summary = embed("runs/x/model", read_documents("held_out.jsonl"), "vectors.arrow")           # all layers
    summary = embed("runs/x/model", docs, "vectors.arrow", mix_weights=[1, 1, 1], gamma=1.0)      # scalar mix

One row per document: ``tokens`` (the word strings, ``<S>``/``</S>`` included, as the biLM saw them) and either
``layers`` (n_layers + 1 lists of per-token vectors of 2 x d_model: the token layer, duplicated as ELMo does,
then each biLSTM layer's forward and backward states) or ``vectors`` (ELMo's task representation
``gamma * sum_j softmax(s)_j h_j`` with the given scalars ``s``). The file is written atomically.
"""
from __future__ import annotations

import pathlib
from typing import Iterable

import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.evaluate import Document


def embed(model_dir: str | pathlib.Path, documents: Iterable[Document], out: str, *,
          mix_weights: list[float] | None = None, gamma: float = 1.0, max_documents: int | None = None) -> dict:
    """Write the ELMo vectors of ``documents`` to the Arrow file ``out``; returns counts and the vector shape."""
    import pyarrow as pa

    from corpusforge.core.files import write_arrow_atomic
    from corpusforge.trainers.checkpoint import load_pretrained
    from corpusforge.trainers.elmo import BiLM, ScalarMix
    from corpusforge.trainers.model_files import not_a_folder, run_model_hint

    model_dir = pathlib.Path(model_dir)
    if not (model_dir / "config.json").is_file():
        what = not_a_folder(model_dir) or "holds no config.json"
        raise UserError(f"{model_dir} {what}; pass the model/ directory of a run trained with "
                        f"train.objective=bilm{run_model_hint(model_dir)}")
    model, _ = load_pretrained(model_dir)
    if not isinstance(model, BiLM):
        raise UserError(f"{model_dir} is not an ELMo model; embed needs a run trained with train.objective=bilm "
                        "(tokenizer family elmo)")
    model.eval()
    layers_count = model.cfg.n_layers + 1
    mix = None
    if mix_weights is not None:
        if len(mix_weights) != layers_count:
            raise UserError(f"--mix-weights needs {layers_count} numbers (token layer + {model.cfg.n_layers} LSTM "
                            f"layers), got {len(mix_weights)}")
        mix = ScalarMix(layers_count)
        with torch.no_grad():
            mix.scalars.copy_(torch.tensor(mix_weights, dtype=torch.float32))
            mix.gamma.fill_(gamma)
    from corpusforge.trainers.model_files import check_tokenizer

    tokenizer = check_tokenizer(pathlib.Path(model_dir) / "tokenizer.json")
    tokenizer.encode_special_tokens = True  # document text is data: a literal "<S>" in it is a word
    tokens_out, values_out, sources = [], [], []
    with torch.no_grad():
        for number, document in enumerate(documents):
            if max_documents is not None and number >= max_documents:
                break
            encoding = tokenizer.encode(document.text)  # <S> words </S>, as the biLM trained on them
            ids = torch.tensor([encoding.ids], dtype=torch.long)
            layers = model.layers(ids)[:, 0]  # (layers, length, 2 x d_model)
            values = mix(layers) if mix is not None else layers
            tokens_out.append(encoding.tokens)
            values_out.append(values.float().numpy().tolist())
            sources.append(document.source)
    if not tokens_out:
        raise UserError("no documents to embed; check --data and --text-field")
    column = "vectors" if mix is not None else "layers"
    width = 2 * model.cfg.d_model
    element = pa.list_(pa.float32(), width)
    kind = pa.list_(element) if mix is not None else pa.list_(pa.list_(element), layers_count)
    batch = pa.RecordBatch.from_arrays(
        [pa.array(sources, pa.string()), pa.array(tokens_out, pa.list_(pa.string())), pa.array(values_out, kind)],
        names=["source", "tokens", column])
    write_arrow_atomic(out, batch)
    return {"documents": len(tokens_out), "tokens": sum(map(len, tokens_out)), "column": column,
            "layers": None if mix is not None else layers_count, "width": width, "out": out}
