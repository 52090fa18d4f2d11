"""The examples each command's ``--help`` ends with, one flow from raw files to a fine-tuned model (the README's
run directory, ``runs/my-corpus``). ``tests/cli/test_main.py`` parses every one of them with the command's own
parser, so an example that names a flag the command no longer has fails there, not in a user's shell."""
from __future__ import annotations

# a command's prog (as argparse names it: "corpusforge tokenizer train") -> command lines, each a `corpusforge ...`
# line that parses as is, or a line starting with "#" that says what the one below does
EXAMPLES: dict[str, list[str]] = {
    "corpusforge demo": [
        "corpusforge demo                                  # everything into runs/demo, ~30 s",
        "corpusforge demo --run-dir runs/demo2 --documents 300 --steps 20 --overwrite",
    ],
    "corpusforge build": [
        "corpusforge build -c corpus.yaml                  # inputs and settings in a file (README)",
        "corpusforge build -i data/web.jsonl.gz -i data/more/ -o runs/my-corpus",
        "corpusforge build -i articles.parquet --text-field body -o runs/articles --set dedup.enabled=false",
        "corpusforge build -c corpus.yaml --overwrite --direct_running_mode=multi_processing --direct_num_workers=2",
    ],
    "corpusforge inspect": [
        "corpusforge inspect runs/my-corpus                # the clean shards",
        "corpusforge inspect runs/my-corpus/removed -n 5 --chars 120",
        "corpusforge inspect runs/my-corpus/tokens/train",
    ],
    "corpusforge config": [
        "corpusforge config -c corpus.yaml --set dedup.enabled=false   # what a command would run with",
        "corpusforge config --reference                    # every key, its type, default and meaning",
        "corpusforge config --schema > corpusforge.schema.json",
    ],
    "corpusforge quality train": [
        "corpusforge quality train --positive runs/my-corpus/clean --negative raw-web.jsonl.gz "
        "--output models/quality.bin",
    ],
    "corpusforge pii": [
        "corpusforge pii notes.txt                         # scrubbed text on stdout, what was found on stderr",
        "echo 'mail me at jane@example.com' | corpusforge pii --lines",
    ],
    "corpusforge tokenizer train": [
        "corpusforge tokenizer train -o runs/my-corpus --vocab-size 8000",
        "corpusforge tokenizer train -c corpus.yaml --family encoder --kind wordpiece --overwrite",
    ],
    "corpusforge tokenizer report": [
        "corpusforge tokenizer report -o runs/my-corpus",
    ],
    "corpusforge tokenize": [
        "corpusforge tokenize -o runs/my-corpus",
        "corpusforge tokenize -c corpus.yaml --val-fraction 0.05 --overwrite",
    ],
    "corpusforge train": [
        "# a quick run on CPU (the defaults: size small, 1000 steps of 16 x 512 tokens)",
        "corpusforge train -o runs/my-corpus --size debug --seq-len 128 --max-steps 200",
        "corpusforge train -c corpus.yaml --objective mlm --size small --device cuda",
        "corpusforge train -o runs/my-corpus --resume",
    ],
    "corpusforge export": [
        "corpusforge export runs/my-corpus/model runs/my-corpus-hf",
    ],
    "corpusforge evaluate": [
        "corpusforge evaluate --model runs/my-corpus-hf --data heldout.jsonl",
        "corpusforge evaluate --model runs/my-corpus/model --data runs/my-corpus --json   # the run's val split",
    ],
    "corpusforge generate": [
        "corpusforge generate --model runs/my-corpus-hf --prompt 'The' --max-new-tokens 20 --seed 0",
        "corpusforge generate --model runs/my-corpus-hf --prompts prompts.txt --greedy --json",
    ],
    "corpusforge fill-mask": [
        "corpusforge fill-mask --model runs/bert-hf 'The capital of France is [MASK].'",
    ],
    "corpusforge finetune": [
        "corpusforge finetune --model runs/my-corpus-hf --task classify --method lora --train train.jsonl "
        "--validation val.jsonl --out runs/ft",
        "corpusforge finetune --model runs/my-corpus-hf --task tag --method full --train ner.jsonl --out runs/ner",
    ],
    "corpusforge predict": [
        "corpusforge predict --model runs/ft --data test.jsonl --out runs/ft/predictions.jsonl",
    ],
    "corpusforge embed": [
        "corpusforge embed --model runs/elmo/model --data heldout.jsonl --out runs/elmo/vectors.arrow",
    ],
    "corpusforge report": [
        "corpusforge report runs/my-corpus                 # runs/my-corpus/report.html and a summary",
        "corpusforge report runs/my-corpus -o /tmp/my-corpus.html",
    ],
    "corpusforge rethreshold": [
        "corpusforge rethreshold runs/my-corpus --set quality.gopher.min_words=80 --out runs/my-corpus-80",
    ],
}


def epilog(prog: str) -> str:
    """The ``Examples:`` block for ``prog``'s help, or "" when it has none."""
    lines = EXAMPLES.get(prog)
    return "Examples:\n" + "".join(f"  {line}\n" for line in lines) if lines else ""
