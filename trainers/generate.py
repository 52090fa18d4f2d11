"""Text from a decoder or seq2seq model: greedy or sampled, batched, with stop strings.

    loaded = load_model("runs/x/model")                   # or an export
    rows = generate(loaded, ["Once upon"], GenerateOptions(max_new_tokens=20, greedy=True))

Decoding is transformers' own ``generate`` on the converted model (KV cache, temperature, top-k, top-p, stop
strings): corpusforge does not re-implement it, so greedy output is transformers' by construction. A decoder's
prompt starts with the end-of-text token, as every document did in training.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.export import LoadedModel, model_device


@dataclasses.dataclass
class GenerateOptions:
    max_new_tokens: int = 64
    greedy: bool = False
    temperature: float = 1.0
    top_k: int = 0  # 0: no top-k filter
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int = 0
    batch_size: int = 8
    use_cache: bool = True
    prompts_as_text: bool = False  # encode_prompts' as_text: predict sets it, as fine-tuning encoded the records

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise UserError(f"--max-new-tokens must be at least 1, got {self.max_new_tokens}")
        if not self.temperature > 0 or self.temperature == float("inf"):  # NaN and inf too: transformers raised
            raise UserError(f"--temperature must be a finite number > 0 (use --greedy for deterministic decoding), got "
                            f"{self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise UserError(f"--top-p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0 or self.batch_size < 1:
            raise UserError("--top-k must be >= 0 and --batch-size >= 1")


def prompt_settings(loaded: LoadedModel, as_text: bool) -> tuple[dict[str, Any], list[int]]:
    """The tokenizer settings a prompt is encoded with, and the ids put before it (a decoder's start token)."""
    tok = loaded.tokenizer
    if loaded.arch == "decoder":
        start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        return {"add_special_tokens": False, "split_special_tokens": as_text}, [start]
    return {"split_special_tokens": as_text}, []


def prompt_ids(loaded: LoadedModel, prompt: str, as_text: bool = False) -> list[int]:
    """One prompt's ids as ``encode_prompts`` gives them, unpadded."""
    settings, before = prompt_settings(loaded, as_text)
    return before + loaded.tokenizer(prompt, **settings)["input_ids"]


# A text longer than this many characters per position the model reads is first counted by a prefix of that
# size (``tokens_at_least``): a 54 MB prompt was refused only after ~90 s of tokenising it whole. 16 characters a
# position is ~4x what English text takes (~4 characters a token), so a prefix of ordinary text decides.
PREFIX_CHARS_PER_POSITION = 16
# The prefix's last characters whose words are not counted: they may read differently in the whole text (a
# special token cut in two, ``\s+(?!\S)`` looking one character on). At least the longest added token.
PREFIX_TAIL_CHARS = 32


def bytes_per_token(tokenizer: Any) -> int | None:
    """The most bytes of text one token of ``tokenizer`` can stand for, where that bounds a text's tokens from its
    length: a byte-level BPE without a normalizer (GPT-2's, BART's) covers every byte of a text with tokens, none
    longer than its vocabulary's longest string (a byte-level string's characters are bytes; UTF-8 counts them
    at least once; an added token by its UTF-8). None for any other: WordPiece's ``[UNK]`` stands for a whole long
    word, a normalizer may shorten the text (NFKC), and whitespace may be no token."""
    import json

    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    pre = spec.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    if spec["model"]["type"] != "BPE" or spec.get("normalizer") or not any(s.get("type") == "ByteLevel" for s in steps):
        return None
    return max(len(token.encode("utf-8", "surrogatepass")) for token in tokenizer.get_vocab())


def tokens_at_least(text: str, limit: int, tokenizer: Any, settings: dict[str, Any] | None = None, before: int = 0,
                    most_bytes: Callable[[], int | None] = lambda: None) -> tuple[int, str] | None:
    """``(n, how)``: at least ``n`` tokens in ``before`` + ``tokenizer(text, **settings)``'s ids, ``how`` saying
    from what; None where the text is short enough to count whole (at most (``limit`` + 1) x
    ``PREFIX_CHARS_PER_POSITION`` + ``PREFIX_TAIL_CHARS`` characters) or nothing cheaper tells.

    From a prefix of that size, split where the tokenizer itself splits: its words (``word_ids``: the pieces its
    own normalizer and pre-tokenizer make, an added token one) are counted but for the last one and any that
    reach into the last ``PREFIX_TAIL_CHARS`` characters, which the rest of the text may change (a word going on,
    characters the normalizer deletes joining two runs of letters into one BERT word, a special token cut in
    two). Each word the tokenizer pieces into tokens alone, and the earlier words read the same in the whole text
    (corpusforge's normalizers map characters one by one, NFKC composes nothing across a space, and its
    pre-tokenizers split from the characters next to a split), so the whole text has at least those tokens and
    the ones the post-processor adds. Before any tokenising, from the text's UTF-8 length over ``most_bytes()``
    (``bytes_per_token``) where the tokenizer has such a bound: a byte-level BPE's one word of CJK or of 2 MB of
    ``a`` leaves the prefix nothing to count. No bound from the length alone holds for every tokenizer (a
    WordPiece ``[UNK]`` covers a whole long word; a Metaspace word of CJK is one word too)."""
    margin = max(PREFIX_TAIL_CHARS, _longest_added(tokenizer) + 1)
    size = (limit + 1) * PREFIX_CHARS_PER_POSITION + margin
    if len(text) <= size:
        return None
    best = None
    most = most_bytes()
    if most:  # no tokenising at all
        length = len(text.encode("utf-8", "surrogatepass"))
        best = -(-length // most), f"{length:,} bytes, at most {most} a token"
    if best is not None and best[0] > limit:
        return best
    encoding = tokenizer(text[:size], **(settings or {}), verbose=False).encodings  # verbose: no "longer than" log
    if encoding:  # a fast tokenizer's: which word each token is of, and its characters in the text
        words, offsets = encoding[0].word_ids, encoding[0].offsets
        last = [w for w in words if w is not None][-1:]
        cut = min(last + [w for w, (_, end) in zip(words, offsets) if w is not None and end > size - margin], default=0)
        kept = [i for i, w in enumerate(words) if w is None or w < cut]  # None: the post-processor's tokens
        if any(words[i] is not None for i in kept) and (best is None or before + len(kept) > best[0]):
            characters = max(offsets[i][1] for i in kept if words[i] is not None)
            best = before + len(kept), f"its first {characters:,} of {len(text):,} characters"
    return best


def _longest_added(tokenizer: Any) -> int:
    """The most characters an added token (``[MASK]``, ``<|endoftext|>``) spans."""
    return max(map(len, getattr(tokenizer, "get_added_vocab", dict)()), default=0)


def refuse_long_prompts(loaded: LoadedModel, prompts: list[str], as_text: bool = False,
                        names: list[str] | None = None) -> None:
    """Refuse, before tokenising them whole, prompts that a prefix or their length already shows are longer than
    the model's positions (``tokens_at_least``); the rest are measured whole (``check_room``)."""
    limit = learned_positions(loaded.model)
    if limit is None:
        return
    known: list[int | None] = []

    def most_bytes() -> int | None:  # read from the tokenizer once, and only for a long prompt
        if not known:
            known.append(bytes_per_token(loaded.tokenizer))
        return known[0]

    settings, before = prompt_settings(loaded, as_text)
    for number, prompt in enumerate(prompts, 1):
        seen = tokens_at_least(prompt, limit, loaded.tokenizer, settings, len(before), most_bytes)
        if seen is not None and (seen[0] > limit or (seen[0] == limit and loaded.arch == "decoder")):
            name = names[number - 1] if names else f"prompt {number}"
            raise UserError(f"{name} is at least {seen[0]:,} tokens ({seen[1]}); the model reads {limit} at most: "
                            "shorten it")


def encode_prompts(loaded: LoadedModel, prompts: list[str], as_text: bool = False) -> dict[str, torch.Tensor]:
    """The batch ``generate`` gets: a decoder's prompts left-padded after a leading end-of-text token; a seq2seq
    model's wrapped by its tokenizer's post-processor (``... </s>``), as in training. ``as_text``: a literal
    special token in a prompt is spelled out (``split_special_tokens``), as fine-tuning encodes its records;
    otherwise it is the token, so a T5 prompt can hold the ``<extra_id_0>`` sentinel it should fill."""
    tok = loaded.tokenizer
    rows = [prompt_ids(loaded, p, as_text) for p in prompts]
    width = max(map(len, rows))
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    left = loaded.arch == "decoder"  # a decoder continues from the last position: pad on the left
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[i, span], mask[i, span] = torch.tensor(row), 1
    device = model_device(loaded.model)
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


@torch.no_grad()
def generate(loaded: LoadedModel, prompts: list[str], options: GenerateOptions = GenerateOptions(),
             names: list[str] | None = None) -> list[dict[str, Any]]:
    """One ``{"prompt", "completion", "tokens", "stopped"}`` per prompt, in order. ``names``: what an error
    calls each prompt (``check_room``; predict's records), ``prompt N`` otherwise."""
    if loaded.arch == "encoder":
        raise UserError("an encoder (masked LM) does not generate text; use corpusforge fill-mask")
    tok = loaded.tokenizer
    settings: dict[str, Any] = {"max_new_tokens": options.max_new_tokens, "use_cache": options.use_cache}
    if options.greedy:
        settings["do_sample"] = False
    else:
        # top_k 0 switches transformers' top-k filter off (None would fall back to its default of 50).
        settings.update(do_sample=True, temperature=options.temperature, top_k=options.top_k, top_p=options.top_p)
    if options.stop:
        settings.update(stop_strings=list(options.stop), tokenizer=tok)
    refuse_long_prompts(loaded, prompts, options.prompts_as_text, names)  # a huge prompt: before tokenising it
    chunks = [prompts[start: start + options.batch_size] for start in range(0, len(prompts), options.batch_size)]
    batches = [encode_prompts(loaded, chunk, options.prompts_as_text) for chunk in chunks]
    check_room(loaded, [n for batch in batches for n in batch["attention_mask"].sum(1).tolist()],
               options.max_new_tokens, names)
    torch.manual_seed(options.seed)
    out = []
    for chunk, batch in zip(chunks, batches):
        generated = loaded.model.generate(**batch, **settings)
        if loaded.arch == "decoder":
            generated = generated[:, batch["input_ids"].size(1):]
        for prompt, ids in zip(chunk, generated.tolist()):
            ids = _until_end(ids, loaded)
            text = tok.decode(ids, skip_special_tokens=True)
            cut = min((text.find(s) for s in options.stop if s in text), default=-1)
            out.append({"prompt": prompt, "completion": text[:cut] if cut >= 0 else text, "tokens": len(ids),
                        "stopped": "stop_string" if cut >= 0 else ("eos" if len(ids) < options.max_new_tokens
                                                                   else "max_new_tokens")})
    return out


def learned_positions(model: Any) -> int | None:
    """How many positions a model's learned position embeddings hold (GPT-2, BART, BERT, ELECTRA; a peft
    wrapper's base), less the virtual tokens prompt and prefix tuning put in front (they take position ids too, as
    fine-tuning's ``input_length`` counts them); None where positions do not run out (T5's relative bias, RoPE)."""
    config = model.config
    limit = {"gpt2": "n_positions", "bart": "max_position_embeddings", "bert": "max_position_embeddings",
             "electra": "max_position_embeddings"}.get(getattr(config, "model_type", None))
    if limit is None:
        return None
    virtual = sum(getattr(c, "num_virtual_tokens", 0) or 0 for c in (getattr(model, "peft_config", None) or {}).values())
    return int(getattr(config, limit)) - virtual


def check_room(loaded: LoadedModel, lengths: list[int], max_new_tokens: int, names: list[str] | None = None) -> None:
    """Refuse, in one line saying what fits, prompts (``lengths``: their tokens, in order) that with
    ``max_new_tokens`` run past the model's learned positions: the embedding lookup past them raised IndexError.
    A decoder's prompt and its new tokens share the positions; a seq2seq model's encoder reads the prompt and
    its decoder the start token and the new tokens. ``names``: what the error calls each prompt (predict: its
    record), ``prompt N`` (from 1, in order) otherwise; every prompt is checked at once, before any is
    generated, so a caller passes all of them, never one at a time (each would be "prompt 1")."""
    limit = learned_positions(loaded.model)
    if limit is None:
        return
    for number, n in enumerate(lengths, 1):
        name = names[number - 1] if names else f"prompt {number}"
        if n > limit or (n == limit and loaded.arch == "decoder"):
            raise UserError(f"{name} is {n} tokens; the model reads {limit} at most: shorten it")
        room = limit - n if loaded.arch == "decoder" else limit - 1
        if max_new_tokens > room:
            raise UserError(f"{name} is {n} tokens and --max-new-tokens {max_new_tokens} would run past the "
                            f"model's {limit} positions; pass --max-new-tokens {room} or fewer")


def _until_end(ids: list[int], loaded: LoadedModel) -> list[int]:
    """The generated ids up to the end-of-sequence token (a finished row of a batch is padded after it)."""
    config = loaded.model.generation_config
    start = getattr(config, "decoder_start_token_id", None) if loaded.arch != "decoder" else None
    if start is not None and ids and ids[0] == start:
        ids = ids[1:]
    eos = config.eos_token_id
    ends = set(eos if isinstance(eos, list) else [eos]) - {None}
    for i, token in enumerate(ids):
        if token in ends:
            return ids[:i]
    return ids
