"""One record's cost against its length: every per-record text operation on hostile texts of growing size.

    OMP_NUM_THREADS=1 .venv/bin/python bench/record_cost.py                        # 1k, 10k, 100k chars
    .venv/bin/python bench/record_cost.py --sizes 1000 10000 100000 1000000 --ops tok_ --texts word digits
    .venv/bin/python bench/record_cost.py --list                                     # operation and text names

Each operation is what a stage's DoFn (or tokenizer training / encoding) does to one record, called directly
(outside Beam). Each hostile text (a run of one combining mark, base+mark pairs, one word with no spaces,
digits, runs of ``.`` or ``-``, deep URL-like paths, emoji ZWJ sequences, bidi controls, U+FDFA whose NFKC
form is 18 characters, mixed scripts) is built at each size by a fixed recipe; ``prose`` (Python's topic help)
is the yardstick. Each measurement runs in a forked child (the models are loaded once, before) and is stopped
past ``--limit`` CPU seconds, so a quadratic path shows as ``>limit`` instead of stalling the bench; a size is
skipped (``skip``) when the growth seen so far predicts it past the limit. Times are CPU seconds (best of up to 3 runs
under 50 ms).

Printed per (operation, text): CPU seconds at each size, seconds per MB of UTF-8 at the largest size measured
(``xprose``: that against prose's seconds per MB at the same size, where ``prose`` is among the texts), and
the growth exponent (log-log slope between the two largest sizes whose smaller time is >= 5 ms; ``-`` when
every time is below that: too fast to tell). Flags: ``SUPERLINEAR`` (exponent > 1.3, or a size past the
limit), ``SLOW`` (> 1 s per MB at the largest size, where that takes 0.1 s or more: fixed costs aside).
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import pickle
import signal
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # measured in forked children: one thread each
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

EXPONENT_FLAG = 1.3
SLOW_S_PER_MB = 1.0
MIN_FOR_SLOPE = 0.005  # seconds: below this a time is mostly call overhead


# ---------------------------------------------------------------------------------------------- texts
def _fill(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def texts(chars: int) -> dict[str, str]:
    """The hostile texts (and ``prose``), each ``chars`` characters."""
    from adversarial import prose

    return {
        "prose": prose(chars),
        "mark_run": "a" + _fill("\u0301", chars - 1),  # one combining mark, repeated
        "mark_run2": "a" + _fill("\u0301\u0316", chars - 1),  # two classes: canonical ordering moves every mark
        "base_mark": _fill("e\u0301", chars),  # alternating base + combining (composes under NFC)
        "word": _fill("abcdefghij", chars),  # one word, no spaces
        "digits": _fill("1234567890", chars),
        "dots": _fill(".", chars),
        "dashes": _fill("-", chars),
        "dot_word": _fill("a.", chars),  # a.a.a.a...: abbreviation / domain / e-mail shaped
        "url": "http://" + _fill("a/b.c-d_e%2F", chars - 7),  # one deep URL-like token
        "spaces": "a" + _fill(" ", chars - 2) + "b",  # one run of whitespace
        "emoji_zwj": _fill("\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466", chars),
        "bidi": _fill("\u202e\u05e9\u05dc\u05d5\u05dd\u202c\u2066abc\u2069\u200f", chars),
        "fdfa": _fill("\ufdfa", chars),  # NFKC: 18 characters each
        "mixed_scripts": _fill("abcабв漢字かなαβγ\u0915\u093f\u0e01\u0e34\u05d0\u0627 ", chars),
    }


# ------------------------------------------------------------------------------------------ operations
def _prose_texts(total: int) -> list[str]:
    from adversarial import prose

    text = prose(total)
    return [text[i:i + 2000] for i in range(0, len(text), 2000)]


def operations() -> dict:
    """``{name: fn(text)}``: each per-record operation as the pipeline or the tokenizer package calls it."""
    import unicodedata

    from corpusforge.core.text_guards import bounded_normalize
    from corpusforge.pipeline.dedup.config import DedupConfig
    from corpusforge.pipeline.dedup.exact import text_digest
    from corpusforge.pipeline.dedup.lines import line_keys
    from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler
    from corpusforge.pipeline.dedup.sentence_split import sentence_spans
    from corpusforge.pipeline.dedup.sentences import sentence_keys
    from corpusforge.pipeline.normalize.config import NormalizeConfig
    from corpusforge.pipeline.normalize.mojibake_screen import may_be_bad
    from corpusforge.pipeline.normalize.stage import normalize_text, repair_mojibake
    from corpusforge.pipeline.pii.config import PIIConfig
    from corpusforge.pipeline.pii.scrubber import Scrubber
    from corpusforge.pipeline.quality.config import QualityConfig
    from corpusforge.pipeline.quality.rules import HeuristicRules
    from corpusforge.pipeline.quality.text import words
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.train import new_tokenizer, train_from_texts
    from tokenizers import normalizers, pre_tokenizers

    quality = QualityConfig()
    quality.langid.enabled = False
    every = HeuristicRules(quality)  # store_values (the default): every rule measured, none skipped
    dedup = DedupConfig()
    near = dedup.near
    word_hasher = MinHasher(near.num_perm, near.seed, Shingler(near.ngram, "word", near.hash))
    char_hasher = MinHasher(near.num_perm, near.seed, Shingler(5, "char", near.hash))
    scrubber = Scrubber(PIIConfig(), salt="bench")
    ops = {
        "ftfy": repair_mojibake,
        "mojibake_screen": lambda t: [may_be_bad(line) for line in t.split("\n")],
        "nfc": lambda t: bounded_normalize("NFC", t),
        "normalize_stage": lambda t: normalize_text(t, NormalizeConfig()),
        "words": words,
        "quality_rules": every.apply,
        "sentence_split": lambda t: sentence_spans(t, "en"),
        "sentence_keys": lambda t: sentence_keys(t, "en", dedup.sentences.min_sentence_chars),
        "line_keys": lambda t: line_keys(t, dedup.lines.min_line_chars),
        "exact_nfkc": lambda t: text_digest(t, "nfkc_casefold"),
        "minhash_word": lambda t: word_hasher.signatures([t]),
        "minhash_char": lambda t: char_hasher.signatures([t]),
        "pii": scrubber.scrub,
        "tok_nfkc": normalizers.NFKC().normalize_str,
        "tok_bert_norm": normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=True
                                                    ).normalize_str,
        "tok_bytelevel_pre": pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True).pre_tokenize_str,
        "tok_bert_pre": pre_tokenizers.BertPreTokenizer().pre_tokenize_str,
        "tok_metaspace_pre": new_tokenizer("unigram", "t5").pre_tokenizer.pre_tokenize_str,
    }
    try:
        from corpusforge.pipeline.quality.langid import LanguageIdentifier

        lid = LanguageIdentifier()
        ops["langid"] = lambda t: lid.predict([t])
    except Exception as exc:  # noqa: BLE001 - the bundled model is optional: say so and go on
        print(f"(langid not measured: {exc})", file=sys.stderr)
    prose_batch = _prose_texts(200_000)
    for kind, family in (("bpe", "decoder"), ("wordpiece", "encoder"), ("unigram", "t5"), ("wordlevel", "elmo")):
        cfg = TokenizerConfig(kind=kind, family=family, vocab_size=2000, min_frequency=2)
        trained = train_from_texts([prose_batch], cfg)
        ops[f"tok_{kind}_encode"] = lambda t, tok=trained: tok.encode(t, add_special_tokens=False)
        # training on prose plus the one record: what the record adds to a training run
        ops[f"tok_{kind}_train"] = lambda t, cfg=cfg: train_from_texts([prose_batch[:20] + [t]], cfg)
    for fn in ops.values():  # lazy loads (Presidio on the first text with a candidate) paid here, not per child
        fn("Warm-up: call +1 202 555 0173 or write to a.b@example.org. Caf\u00e9 \u00c3\u00a9.")
    import gc

    gc.freeze()  # the loaded models out of the collector's sight: a child's collections do not walk (and copy) them
    return ops


# ---------------------------------------------------------------------------------------------- timing
def _run_child(fn, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn(text)
        best = min(best, time.process_time() - start)
        if best > 0.05:
            break
    return best


def measure(fn, text: str, limit: float, repeat: int = 3) -> float | None:
    """CPU seconds of ``fn(text)`` in a forked child; None past ``limit`` CPU seconds (the child is stopped by
    ``RLIMIT_CPU``, or killed past 20 times ``limit`` of wall time: CPU time, so machine load does not kill it)."""
    import resource

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read)
        used = resource.getrusage(resource.RUSAGE_SELF)
        budget = math.ceil(used.ru_utime + used.ru_stime + limit)
        resource.setrlimit(resource.RLIMIT_CPU, (budget, budget + 1))
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        try:
            result = _run_child(fn, text, repeat)
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            result = f"{type(exc).__name__}: {exc}"[:200]
        os.write(write, pickle.dumps(result))
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 20 * limit
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.005)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
        return None
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    if not data:  # stopped by RLIMIT_CPU
        return None
    result = pickle.loads(data)
    if isinstance(result, str):
        raise RuntimeError(result)
    return result if result <= limit else None


SKIPPED = math.nan  # a size not run: the growth so far predicts it past the limit


def exponent(points: list[tuple[int, float | None]]) -> float | None:
    """Log-log slope between the two largest sizes whose smaller time is at least ``MIN_FOR_SLOPE``."""
    usable = [(n, t) for n, t in points if t is not None and not math.isnan(t)]
    for (n1, t1), (n2, t2) in reversed(list(zip(usable, usable[1:]))):
        if t1 >= MIN_FOR_SLOPE:
            return math.log(t2 / t1) / math.log(n2 / n1)
    return None


def series(fn, make, sizes: list[int], limit: float) -> list[tuple[int, float | None]]:
    """``[(size, seconds)]``: None where the run was killed past ``limit``, ``SKIPPED`` where the growth so far
    predicts it past ``limit`` (or a smaller size was killed)."""
    points: list[tuple[int, float | None]] = []
    for size in sizes:
        if points:
            last_n, last_t = points[-1]
            if last_t is None or math.isnan(last_t):
                points.append((size, SKIPPED))
                continue
            slope = max(1.0, exponent(points) or 1.0)
            if last_t * (size / last_n) ** slope > limit:
                points.append((size, SKIPPED))
                continue
        points.append((size, measure(fn, make(size), limit)))
    return points


def _cell(seconds: float | None, limit: float) -> str:
    if seconds is None:
        return f">{limit:g}"
    return "skip" if math.isnan(seconds) else f"{seconds:.4f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--ops", nargs="+", help="operations whose name starts with one of these")
    parser.add_argument("--texts", nargs="+", help="texts whose name starts with one of these")
    parser.add_argument("--limit", type=float, default=10.0, help="seconds one measurement may take")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)

    ops = operations()
    names = list(texts(100))
    if args.list:
        print("operations:", " ".join(ops))
        print("texts:", " ".join(names))
        return 0
    ops = {k: v for k, v in ops.items() if not args.ops or any(k.startswith(p) for p in args.ops)}
    names = [n for n in names if n == "prose" or not args.texts or any(n.startswith(p) for p in args.texts)]
    cache: dict[int, dict[str, str]] = {}

    def make(name):
        def text(size):
            if size not in cache:
                cache[size] = texts(size)
            return cache[size][name]
        return text

    sizes = sorted(args.sizes)
    head = (f"{'operation':<22}{'text':<15}" + "".join(f"{f'{n:,}':>11}" for n in sizes)
            + f"{'s/MB':>9}{'xprose':>8}{'exp':>7}  flag")
    print(f"CPU seconds per record (limit {args.limit:g} s each)\n{head}")
    flagged = []
    for op, fn in ops.items():
        prose_per_mb: dict[int, float] = {}
        for name in names:
            try:
                points = series(fn, make(name), sizes, args.limit)
            except RuntimeError as exc:
                print(f"{op:<22}{name:<15}raised {exc}")
                continue
            measured = [(n, t) for n, t in points if t is not None and not math.isnan(t)]
            largest_n, largest_t = measured[-1] if measured else (sizes[0], None)
            per_mb = largest_t / (len(make(name)(largest_n).encode()) / 1e6) if largest_t is not None else None
            slope = exponent(points)
            if name == "prose":
                prose_per_mb = {n: t / (len(make(name)(n).encode()) / 1e6) for n, t in measured}
            ratio = per_mb / prose_per_mb[largest_n] if per_mb is not None and prose_per_mb.get(largest_n) else None
            flags = []
            if (slope is not None and slope > EXPONENT_FLAG) or any(t is None for _, t in points):
                flags.append("SUPERLINEAR")
            if per_mb is not None and per_mb > SLOW_S_PER_MB and largest_t >= 0.1:
                flags.append("SLOW")
            cells = "".join(f"{_cell(t, args.limit):>11}" for _, t in points)
            print(f"{op:<22}{name:<15}{cells}{(f'{per_mb:.2f}' if per_mb is not None else '-'):>9}"
                  f"{(f'{ratio:.1f}' if ratio is not None else '-'):>8}"
                  f"{(f'{slope:.2f}' if slope is not None else '-'):>7}  {' '.join(flags)}", flush=True)
            if "SUPERLINEAR" in flags:
                flagged.append(f"{op}/{name}")
    print("super-linear:", ", ".join(flagged) if flagged else "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
