"""Fine-tuning at the defaults, method x model size, against a bag-of-words baseline, on an offline task.

    .venv/bin/python bench/finetune.py --sizes debug --per-class 120      # a few minutes on 2 CPU cores
    .venv/bin/python bench/finetune.py --sizes debug,small,base --pretrain-steps 600   # a GPU machine
    .venv/bin/python bench/finetune.py --sizes custom --d-model 128 --layers 4 --init both   # the older table

The task: which documentation set a paragraph comes from, three classes built from text on the machine:
Python's topic help (`pydoc_data.topics`), docstrings of standard-library modules, and the Debian package
documentation under /usr/share/doc (README and NEWS files; the bench setup may `apt-get install` packages
with docs to get more). Paragraphs of 200+ characters, the same number per class, split 75/25 by a seeded
shuffle.

Pretraining: a BERT (masked LM) with corpusforge's own trainer on the training paragraphs (text only, no
labels; the validation paragraphs are left out), WordPiece vocabulary trained on the same text, at each of
``--sizes`` (corpusforge's named sizes: debug d=64 x 2 layers, small 512 x 6, base 768 x 12; ``custom``:
``--d-model`` x ``--layers``). ``--init both`` adds the same architecture at its initial weights. Every
fine-tuning run uses finetune's defaults (the learning rate for the method and width, warmup, the best epoch
kept) at the same budget (epochs, batch size, max length). Printed: the kept epoch's validation accuracy
and macro-F1, the learning rate, trainable share, seconds of fine-tuning (machine-load dependent), and the
bag-of-words baseline (TF-IDF + logistic regression on the same split) once per table.
"""
from __future__ import annotations

import argparse
import gzip
import inspect
import json
import pathlib
import random
import sys
import tempfile

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

STDLIB = ("abc argparse ast asyncio base64 bisect calendar collections concurrent configparser contextlib copy csv "
          "dataclasses datetime decimal difflib email enum fractions functools gettext glob gzip hashlib heapq hmac "
          "html http imaplib inspect io ipaddress itertools json logging lzma mailbox math mimetypes multiprocessing "
          "numbers operator optparse os pathlib pickle pprint queue random re sched secrets selectors shelve shlex "
          "shutil smtplib socket sqlite3 ssl statistics string struct subprocess tarfile tempfile textwrap threading "
          "timeit tokenize traceback types typing unittest urllib uuid warnings weakref xml zipfile zoneinfo").split()


def paragraphs(text: str) -> list[str]:
    out = []
    for block in text.split("\n\n"):
        block = " ".join(block.split())
        if 200 <= len(block):
            out.append(block[:1000])
    return out


def topics() -> list[str]:
    from pydoc_data.topics import topics as table

    return [p for text in table.values() for p in paragraphs(text)]


def docstrings() -> list[str]:
    import importlib

    out = []
    for name in STDLIB:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        objects = [module] + [v for _, v in sorted(vars(module).items()) if inspect.isclass(v) or inspect.isfunction(v)]
        for obj in objects:
            out += paragraphs(inspect.getdoc(obj) or "")
    return list(dict.fromkeys(out))


def debian_docs() -> list[str]:
    out = []
    for path in sorted(pathlib.Path("/usr/share/doc").glob("*/*")):
        if not path.name.startswith(("README", "NEWS")) or not path.is_file():
            continue
        try:
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            out += paragraphs(data.decode("utf-8"))
        except (OSError, UnicodeDecodeError, EOFError):
            continue
    return list(dict.fromkeys(out))


def build_task(root: pathlib.Path, per_class: int, seed: int,
               train_per_class: int = 0) -> tuple[pathlib.Path, pathlib.Path, list[str], dict]:
    sources = {"python_topics": topics(), "python_docstrings": docstrings(), "debian_docs": debian_docs()}
    available = {k: len(v) for k, v in sources.items()}
    n = min(per_class, *available.values())
    rnd = random.Random(seed)
    train, val = [], []
    for label, texts in sources.items():
        texts = sorted(texts)
        rnd.shuffle(texts)
        chosen = texts[:n]
        cut = min(train_per_class, n - 1) if train_per_class else n * 3 // 4
        train += [{"text": t, "label": label} for t in chosen[:cut]]
        val += [{"text": t, "label": label} for t in chosen[cut:]]
    rnd.shuffle(train)
    for i, r in enumerate(train + val):
        r["id"] = str(i)
    paths = []
    for name, rows in (("train", train), ("val", val)):
        path = root / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1], [r["text"] for r in train], {"available": available, "per_class": n,
                                                            "train": len(train), "validation": len(val)}


def pretrain(run: pathlib.Path, texts: list[str], args) -> tuple[pathlib.Path, pathlib.Path]:
    """RUN/model (pretrained MLM) and RUN/random (the same architecture, initial weights)."""
    from corpusforge.core.config_loader import apply_overrides, from_dict
    from corpusforge.trainers.checkpoint import load_pretrained, save_pretrained
    from corpusforge.trainers.config import TrainConfig
    from corpusforge.trainers.model import Transformer
    from corpusforge.trainers.train import train_model
    from tests.trainers.token_runs import write_wordpiece_token_run

    tok_path = write_wordpiece_token_run(run, texts, vocab_size=args.vocab, val_docs=20)
    d_model, layers, heads = args.d_model, args.layers, args.heads
    data = apply_overrides({}, [
        "train.objective=mlm", "train.model.size=debug", f"train.model.d_model={d_model}",
        f"train.model.n_layers={layers}", f"train.model.d_ff={4 * d_model}", f"train.model.n_heads={heads}",
        f"train.seq_len={args.max_length}", "train.micro_batch_size=16", f"train.max_steps={args.pretrain_steps}",
        "train.eval_every=0", "train.eval_batches=2", "train.progress=false", "train.optim.lr=0.001",
        "train.optim.warmup_steps=50", "train.model.dropout=0.1", "train.device=cpu"])
    from corpusforge.core.rundir import RunPaths

    train_model(from_dict(TrainConfig, data["train"], "train"), RunPaths(str(run), overwrite=True))
    model, info = load_pretrained(run / "model")
    torch.manual_seed(args.seed)
    save_pretrained(Transformer(model.cfg), run / "random", tokenizer=tok_path, info={**info, "step": 0})
    return run / "model", run / "random"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-class", type=int, default=240, help="Paragraphs per class (3/4 train, 1/4 validation).")
    parser.add_argument("--pretrain-steps", type=int, default=600)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=4000)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=0, help="0: finetune's default (3, more on a small set).")
    parser.add_argument("--lr", type=float, default=0.0, help="finetune.lr (0: the default for the method and width).")
    parser.add_argument("--min-steps", type=int, default=None, help="finetune.min_steps (default: finetune's).")
    parser.add_argument("--train-per-class", type=int, default=0,
                        help="Training paragraphs per class (the rest of --per-class validate); 0: 3/4.")
    parser.add_argument("--seeds", default="", help="Fine-tuning seeds, e.g. 0,1,2 (default: --seed).")
    parser.add_argument("--compare", action="store_true",
                        help="Also run each method as before min_steps (--epochs 3) and print both, per seed.")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--methods", default="full,lora,adapter,prefix,prompt")
    parser.add_argument("--sizes", default="debug", help="debug, small, base (corpusforge's sizes) or custom.")
    parser.add_argument("--init", choices=["pretrained", "both"], default="pretrained")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="Also write the results here.")
    parser.add_argument("--work", metavar="DIR", help="Keep the task, the models and the outputs here (an empty or new directory).")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.trainers.finetune.config import FinetuneConfig
    from corpusforge.trainers.finetune.train import finetune

    quiet_transformers()
    from corpusforge.trainers.model import SIZES

    results, baseline = [], None
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(args.work or tmp)
        root.mkdir(parents=True, exist_ok=True)
        train, val, texts, task = build_task(root, args.per_class, args.seed, args.train_per_class)
        print(f"task: {json.dumps(task)}", flush=True)
        for size in args.sizes.split(","):
            if size != "custom":
                args.d_model, args.layers, args.heads = (SIZES[size][k] for k in ("d_model", "n_layers", "n_heads"))
            if (root / f"run-{size}" / "random").is_dir():  # --work kept from an earlier run of the same task
                pretrained, random_init = root / f"run-{size}" / "model", root / f"run-{size}" / "random"
            else:
                pretrained, random_init = pretrain(root / f"run-{size}", texts, args)
            inits = (("pretrained", pretrained), ("random", random_init)) if args.init == "both" else (("pretrained", pretrained),)
            for init, model in inits:
                runs = [(m, v, seed) for m in args.methods.split(",") for v in (("before", "after") if args.compare
                        else ("default",)) for seed in ([int(x) for x in args.seeds.split(",")] if args.seeds else [args.seed])]
                for method, variant, seed in runs:
                    epochs = 3 if variant == "before" else args.epochs  # before: 3 epochs whatever the set's size
                    config = FinetuneConfig(model=str(model), task="classify", method=method, train=str(train),
                                            validation=str(val),
                                            out=str(root / f"ft-{size}-{init}-{method}-{variant}-{seed}-{args.min_steps}-{args.lr}"),
                                            epochs=epochs, batch_size=args.batch_size, max_length=args.max_length,
                                            seed=seed, progress=False, device="cpu", lr=args.lr,
                                            **({} if args.min_steps is None else {"min_steps": args.min_steps}))
                    try:
                        metrics = finetune(config)
                    except Exception as exc:  # a method refused on this model: say so in the table
                        row = {"size": size, "init": init, "method": method, "error": str(exc).splitlines()[0][:120]}
                        results.append(row)
                        print(json.dumps(row), flush=True)
                        continue
                    baseline = metrics.get("baseline", baseline)
                    kept = metrics["kept_epoch"]
                    row = {"size": size, "d_model": args.d_model, "layers": args.layers, "init": init, "method": method,
                           "variant": variant, "seed": seed, "learning_rate": metrics["learning_rate"],
                           "epochs": metrics["planned_epochs"], "steps": metrics["optimizer_steps"], "kept_epoch": kept,
                           "val_accuracy": round(metrics["kept"]["val_accuracy"], 4),
                           "val_macro_f1": round(metrics["kept"]["val_macro_f1"], 4),
                           "val_loss": round(metrics["kept"]["val_loss"], 4),
                           "trainable_params": metrics["trainable_params"], "total_params": metrics["total_params"],
                           "trainable_share": round(metrics["trainable_share"], 4),
                           "seconds": round(sum(e["seconds"] for e in metrics["epochs"]), 1),
                           "accuracy_per_validation": [round(e["val_accuracy"], 4) for e in metrics["epochs"]]}
                    results.append(row)
                    print(json.dumps({k: v for k, v in row.items() if k != "accuracy_per_validation"}), flush=True)
    print("\n| size | init | method | run | lr | epochs (steps) | val accuracy, mean (per seed) | val loss, mean | "
          "macro-F1, mean | trainable share | seconds, mean |\n|---|---|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["size"], r["init"], r["method"], r.get("variant", "")), []).append(r)
    for (size, init, method, variant), rows in groups.items():
        if "error" in rows[0]:
            print(f"| {size} | {init} | {method} | | refused: {rows[0]['error']} | | | | | | |")
            continue
        r = rows[0]
        mean = lambda key: sum(x[key] for x in rows) / len(rows)  # noqa: E731
        each = ", ".join(f"{x['val_accuracy']:.2f}" for x in rows)
        print(f"| {size} (d={r['d_model']}, {r['layers']} layers) | {init} | {method} | {variant} | "
              f"{r['learning_rate']:.2g} | {r['epochs']} ({r['steps']}) | {mean('val_accuracy'):.3f} "
              f"({each}) | {mean('val_loss'):.3f} | "
              f"{mean('val_macro_f1'):.3f} | {100 * r['trainable_share']:.2f}% | {mean('seconds'):.1f} |")
    if baseline:
        print(f"| baseline | - | TF-IDF + logistic regression | | - | - | {baseline['val_accuracy']:.3f} | - | "
              f"{baseline['val_macro_f1']:.3f} | - | - |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"task": task, "args": vars(args), "baseline": baseline,
                                                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
