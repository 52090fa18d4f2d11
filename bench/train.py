"""Training throughput and loss of corpusforge's trainer beside Hugging Face transformers, and data-loader headroom.

    .venv/bin/python bench/train.py                     # CPU, `small` size, GPT-2 / BERT / T5 side by side
    .venv/bin/python bench/train.py --steps 12 --batch 4 --seq-len 128 --threads 1
    .venv/bin/python bench/train.py --mfu               # on a CUDA machine: decoder `base`, bf16, compiled

For each family, our model and the transformers class of the same dimensions (GPT2LMHeadModel, BertForMaskedLM,
T5ForConditionalGeneration; `small`: d=512, 6 layers per stack, 8 heads, MLP 2048, dropout 0) train on the very
same batches from our data pipeline (pre-built, so loading is timed separately), with the same AdamW
settings, one step of each in turn so that load on a shared machine hits both alike. Reported: tokens/s
(encoder + decoder positions per second), their ratio, and the held-out loss after K steps (both losses are
the same mean cross-entropy over labelled positions, computed from each model's logits). Then the data
loader's tokens/s per objective against what training consumes.

Needs `pip install transformers` (the `bench` extra). Text: the Python documentation shipped with Python
(`pydoc_data.topics`), so it runs offline.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from corpusforge.tokenizer.token_shards import TokenShards, write_token_shards  # noqa: E402
from corpusforge.trainers.data import BatchPlan, ExampleStream, PackedWindows, TokenData, make_loader  # noqa: E402
from corpusforge.trainers.model import Transformer, model_config  # noqa: E402
from corpusforge.trainers.objectives import IGNORE  # noqa: E402
from corpusforge.trainers.registry import build_objective, prepare_vocabulary  # noqa: E402
from corpusforge.trainers.vocab import Vocabulary  # noqa: E402

FAMILIES = [("gpt2", "clm"), ("bert", "mlm"), ("t5", "span")]


def corpus() -> list[str]:
    from pydoc_data.topics import topics

    docs = []
    for text in topics.values():
        docs.extend(p.strip() for p in text.split("\n\n") if len(p.strip()) > 200)
    return docs


def build_run(directory: pathlib.Path, vocab_size: int) -> pathlib.Path:
    """tokenizer/tokenizer.json (byte-level BPE, the bart family's special tokens) and tokens/ of the corpus."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from corpusforge.tokenizer.special_tokens import family_tokens

    texts = corpus()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(family_tokens("bart").tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    (directory / "tokenizer").mkdir(parents=True, exist_ok=True)
    tok_path = directory / "tokenizer" / "tokenizer.json"
    tokenizer.save(str(tok_path))
    encoded = [e.ids for e in tokenizer.encode_batch(texts)]
    rng = np.random.default_rng(0)
    is_val = rng.random(len(encoded)) < 0.05
    splits = {}
    for name, docs in (("train", [d for d, v in zip(encoded, is_val) if not v]),
                       ("val", [d for d, v in zip(encoded, is_val) if v])):
        paths = write_token_shards(directory / "tokens" / name, docs, docs_per_shard=2000)
        splits[name] = {"shards": [f"{name}/{p.name}" for p in paths], "documents": len(docs),
                        "tokens": sum(map(len, docs))}
    manifest = {"tokenizer": "../tokenizer/tokenizer.json",
                "tokenizer_sha256": hashlib.sha256(tok_path.read_bytes()).hexdigest(),
                "vocab_size": tokenizer.get_vocab_size(), "dtype": "uint16", "splits": splits}
    (directory / "tokens" / "manifest.json").write_text(json.dumps(manifest))
    return directory


def hf_model(family: str, cfg):
    """The transformers model with our config's dimensions (same positions, norms, activation, tying)."""
    import transformers as tf

    if family == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(
            vocab_size=cfg.vocab_size, n_positions=cfg.max_len, n_embd=cfg.d_model, n_layer=cfg.n_layers,
            n_head=cfg.n_heads, n_inner=cfg.d_ff, activation_function="gelu", resid_pdrop=0.0, embd_pdrop=0.0,
            attn_pdrop=0.0, bos_token_id=0, eos_token_id=2))
    if family == "bert":
        return tf.BertForMaskedLM(tf.BertConfig(
            vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layers,
            num_attention_heads=cfg.n_heads, intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_len,
            type_vocab_size=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=1))
    return tf.T5ForConditionalGeneration(tf.T5Config(
        vocab_size=cfg.vocab_size, d_model=cfg.d_model, d_kv=cfg.d_model // cfg.n_heads, d_ff=cfg.d_ff,
        num_layers=cfg.n_layers, num_heads=cfg.n_heads, dropout_rate=0.0, feed_forward_proj="relu",
        tie_word_embeddings=True, pad_token_id=1, eos_token_id=2, decoder_start_token_id=1))


def hf_loss(model, batch):
    kw = {"decoder_input_ids": batch["decoder_input_ids"]} if "decoder_input_ids" in batch else {}
    logits = model(input_ids=batch["input_ids"], **kw).logits
    labels = batch["labels"]
    return F.cross_entropy(logits[labels != IGNORE].float(), labels[labels != IGNORE])


def our_loss(model, batch):
    return model(**batch)[1]


def adamw(model, lr):
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), foreach=True)


def batches(run_dir, objective, vocab_seed, n, micro, split="train"):
    data = TokenData.from_run(run_dir)
    windows = PackedWindows(TokenShards(data.splits[split]), objective.raw_length, objective.separator,
                            seed=vocab_seed, shuffle=split == "train")
    loader = make_loader(ExampleStream(windows, objective, vocab_seed), BatchPlan(0, micro, 1))
    return [next(loader) for _ in range(n)]


def positions(batch) -> int:
    dec = batch.get("decoder_input_ids")
    return batch["input_ids"].numel() + (dec.numel() if dec is not None else 0)


def compare(run_dir, family, objective_name, args):
    vocab = Vocabulary.from_file(run_dir / "tokenizer" / "tokenizer.json")
    vocab = prepare_vocabulary(vocab, objective_name, args.seq_len)
    objective = build_objective(objective_name, vocab, args.seq_len)
    cfg = model_config(family, "small", vocab_size=-(-vocab.size // 64) * 64,
                       max_len=max(args.seq_len, objective.decoder_length), dropout=0.0)
    torch.manual_seed(0)
    ours = Transformer(cfg)
    torch.manual_seed(0)
    theirs = hf_model(family, cfg)
    train = batches(run_dir, objective, 1, args.steps, args.batch)
    val = batches(run_dir, objective, 2, args.eval_batches, args.batch, split="val")
    sides = {"ours": (ours, our_loss, adamw(ours, args.lr)), "hf": (theirs, hf_loss, adamw(theirs, args.lr))}
    seconds = {k: 0.0 for k in sides}
    tokens = 0
    for step, batch in enumerate(train):
        lr = args.lr * min(1.0, (step + 1) / args.warmup)
        for name, (model, loss_fn, opt) in sides.items():
            for group in opt.param_groups:
                group["lr"] = lr
            start = time.perf_counter()
            loss = loss_fn(model, batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            if step >= args.skip:
                seconds[name] += time.perf_counter() - start
        if step >= args.skip:
            tokens += positions(batch)
        print(f"  {family} step {step + 1}/{len(train)}", file=sys.stderr, flush=True)
    result = {"family": family, "objective": objective_name, "params_ours": ours.num_params(),
              "params_hf": sum(p.numel() for p in theirs.parameters())}
    for name, (model, loss_fn, _) in sides.items():
        model.eval()
        with torch.no_grad():
            losses = [(float(loss_fn(model, b)), int((b["labels"] != IGNORE).sum())) for b in val]
        result[f"tokens_per_s_{name}"] = tokens / seconds[name]
        result[f"val_loss_{name}"] = sum(l * n for l, n in losses) / sum(n for _, n in losses)
    result["speed_ratio"] = result["tokens_per_s_ours"] / result["tokens_per_s_hf"]
    result["loss_diff_pct"] = 100 * (result["val_loss_ours"] - result["val_loss_hf"]) / result["val_loss_hf"]
    result["train_tokens_per_s"] = result["tokens_per_s_ours"]
    return result, objective


def loader_throughput(run_dir, objective, args) -> float:
    """Tokens/s (encoder + decoder positions) the data loader delivers in one process, no workers."""
    data = TokenData.from_run(run_dir)
    windows = PackedWindows(TokenShards(data.splits["train"]), objective.raw_length, objective.separator, seed=3)
    loader = make_loader(ExampleStream(windows, objective, 3), BatchPlan(0, args.batch, 1))
    next(loader)
    start, tokens = time.perf_counter(), 0
    for _ in range(args.loader_batches):
        tokens += positions(next(loader))
    return tokens / (time.perf_counter() - start)


def measure_mfu(args) -> None:
    """Decoder `base` in bf16, compiled, on one CUDA device: tokens/s and MFU of the training step."""
    from corpusforge.trainers.metrics import peak_flops, train_flops

    if not torch.cuda.is_available():
        raise SystemExit("--mfu needs a CUDA device")
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    cfg = model_config("gpt2", "base", vocab_size=50304, max_len=1024, dropout=0.0)
    model = Transformer(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    step = torch.compile(model, fullgraph=True)
    x = torch.randint(0, 50257, (args.mfu_batch, 1024), device=device)
    times = []
    for i in range(30):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, loss = step(x, labels=x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    t = float(np.median(times[10:]))
    flops = train_flops(cfg, args.mfu_batch, 1024, predicted=args.mfu_batch * 1024)
    peak = peak_flops(device, "bfloat16")
    print(f"{torch.cuda.get_device_name(device)}: {args.mfu_batch * 1024 / t:,.0f} tokens/s, "
          f"{flops / t / 1e12:.1f} TFLOP/s" + (f", MFU {100 * flops / t / peak:.1f}%" if peak else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=12, help="Training steps per model (K).")
    parser.add_argument("--skip", type=int, default=2, help="First steps left out of the timing.")
    parser.add_argument("--batch", type=int, default=4, help="Examples per step.")
    parser.add_argument("--seq-len", type=int, default=128, help="Tokens per example (encoder input).")
    parser.add_argument("--lr", type=float, default=1e-3, help="Peak learning rate, both sides.")
    parser.add_argument("--warmup", type=int, default=4, help="Linear warmup steps.")
    parser.add_argument("--eval-batches", type=int, default=4, help="Held-out batches for the loss after K steps.")
    parser.add_argument("--vocab-size", type=int, default=8000, help="BPE vocabulary of the benchmark tokenizer.")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (both sides).")
    parser.add_argument("--loader-batches", type=int, default=100, help="Batches timed for the data loader.")
    parser.add_argument("--families", default="gpt2,bert,t5", help="Which comparisons to run.")
    parser.add_argument("--mfu", action="store_true", help="Measure MFU of the decoder `base` on CUDA instead.")
    parser.add_argument("--mfu-batch", type=int, default=16, help="Batch of 1024-token sequences for --mfu.")
    parser.add_argument("--json", default=None, help="Also write the results to this JSON file.")
    args = parser.parse_args()
    if args.mfu:
        measure_mfu(args)
        return
    torch.set_num_threads(args.threads)
    import transformers

    with tempfile.TemporaryDirectory() as tmp:
        started = time.time()
        run_dir = build_run(pathlib.Path(tmp), args.vocab_size)
        data = TokenData.from_run(run_dir)
        print(f"corpus: Python docs, {data.manifest['splits']['train']['tokens']:,} train tokens; "
              f"tokenizer BPE {args.vocab_size}; torch {torch.__version__}, transformers {transformers.__version__}, "
              f"{args.threads} CPU thread(s); batch {args.batch} x {args.seq_len} tokens, K = {args.steps} steps "
              f"(first {args.skip} untimed)")
        results = []
        wanted = args.families.split(",")
        for family, objective_name in FAMILIES:
            if family not in wanted:
                continue
            result, objective = compare(run_dir, family, objective_name, args)
            result["loader_tokens_per_s"] = loader_throughput(run_dir, objective, args)
            result["loader_headroom"] = result["loader_tokens_per_s"] / result["train_tokens_per_s"]
            results.append(result)
        print()
        print("| family (objective) | params ours / HF | tokens/s ours | tokens/s HF | ratio | val loss ours | "
              "val loss HF | loss diff | loader tokens/s | loader / training |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in results:
            print(f"| {r['family']} ({r['objective']}) | {r['params_ours'] / 1e6:.1f}M / {r['params_hf'] / 1e6:.1f}M "
                  f"| {r['tokens_per_s_ours']:,.0f} | {r['tokens_per_s_hf']:,.0f} | {r['speed_ratio']:.2f}x "
                  f"| {r['val_loss_ours']:.3f} | {r['val_loss_hf']:.3f} | {r['loss_diff_pct']:+.1f}% "
                  f"| {r['loader_tokens_per_s']:,.0f} | {r['loader_headroom']:,.0f}x |")
        print(f"\n(total {time.time() - started:.0f} s)")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))


if __name__ == "__main__":
    main()
