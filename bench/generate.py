"""Generation speed with and without the KV cache: tokens/s of `corpusforge generate`'s decoding.

    .venv/bin/python bench/generate.py                            # decoder `small`, CPU, 1 thread
    .venv/bin/python bench/generate.py --family t5 --size small --new-tokens 128 --batch 4
    .venv/bin/python bench/generate.py --device cuda --size base   # on a GPU machine

A model of the family and size (random weights: speed does not depend on them) is converted to transformers
exactly as `corpusforge export` does and decodes greedily, batch x new-tokens tokens after a prompt of
--prompt-tokens tokens, with `use_cache=True` and `use_cache=False`; each setting runs --repeats times
alternately and the best time is reported. Generation stops only at --new-tokens (no end token is allowed).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from corpusforge.trainers.hf_layout import to_transformers  # noqa: E402
from corpusforge.trainers.model import Transformer, model_config  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="gpt2", choices=["gpt2", "t5", "bart"])
    parser.add_argument("--size", default="small", choices=["debug", "small", "base"])
    parser.add_argument("--vocab", type=int, default=32_000)
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    max_len = args.prompt_tokens + args.new_tokens + 1
    ours = Transformer(model_config(args.family, args.size, vocab_size=args.vocab, max_len=max_len, dropout=0.0))
    # No end token in the vocabulary's range: every row generates exactly --new-tokens tokens.
    hf = to_transformers(ours.eval(), {"pad": 0, "bos": 1}).to(args.device)
    hf.generation_config.eos_token_id = None
    hf.generation_config.pad_token_id = 0
    if hf.config.is_encoder_decoder:
        hf.generation_config.decoder_start_token_id = 0
        hf.generation_config.forced_bos_token_id = None
        hf.generation_config.forced_eos_token_id = None
    ids = torch.randint(2, args.vocab, (args.batch, args.prompt_tokens), device=args.device)
    best = {True: float("inf"), False: float("inf")}
    outputs = {}
    with torch.no_grad():
        hf.generate(input_ids=ids, max_new_tokens=2, do_sample=False)  # warm-up
        for _ in range(args.repeats):
            for cache in (True, False):
                if args.device.startswith("cuda"):
                    torch.cuda.synchronize()
                start = time.perf_counter()
                out = hf.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=args.new_tokens,
                                  min_new_tokens=args.new_tokens, do_sample=False, use_cache=cache)
                if args.device.startswith("cuda"):
                    torch.cuda.synchronize()
                best[cache] = min(best[cache], time.perf_counter() - start)
                outputs[cache] = out.tolist()
    tokens = args.batch * args.new_tokens
    print(f"{args.family} {args.size} ({ours.num_params() / 1e6:.1f}M parameters, vocab {args.vocab}) on "
          f"{args.device}, {args.threads} thread(s): batch {args.batch}, prompt {args.prompt_tokens} tokens, "
          f"{args.new_tokens} new tokens, greedy, best of {args.repeats}")
    for cache in (True, False):
        print(f"  KV cache {'on ' if cache else 'off'}: {tokens / best[cache]:8.1f} tokens/s ({best[cache]:.2f} s)")
    print(f"  speed-up from the cache: {best[False] / best[True]:.2f}x; same tokens: {outputs[True] == outputs[False]}")


if __name__ == "__main__":
    main()
