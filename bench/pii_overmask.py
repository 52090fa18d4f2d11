"""Over-masking of the PII view's decoding rules on real text: every line holding ``=``, ``%``, ``&`` or ``\\`` of
this repository's ``.py``, ``.md``, ``.json`` and ``.html`` files and of Python's standard library with its
site-packages (and every pair of lines whose first ends in one ``=``: a quoted-printable soft break), read by the
view of another commit (``--against``) and by this tree's; prints how many views change, by kind, and every line
whose *scrub* changes (a real address or number newly masked, or code newly masked: over-masking).

    python bench/pii_overmask.py --against 2e3a2d6
    python bench/pii_overmask.py --against 2e3a2d6 --skip pipeline/pii/canonical.py --skip docs/pii.md --examples 40
    python bench/pii_overmask.py --against HEAD --written-pass --skip docs/pii.md   # what the written pass adds

The view is ``corpusforge.pipeline.pii.canonical.canonical``; the other commit's module is taken with ``git show``
and loaded beside this one, and a scrub under it is this tree's ``Scrubber`` with that module's ``canonical``.
Files that quote planted values (the PII tests, the fuzz families, docs/pii.md) change their scrub by design:
``--skip`` leaves them out.
"""
from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import pathlib
import random
import re
import subprocess
import sys
import sysconfig
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def other_view(commit: str):
    """The ``canonical`` module of ``commit``, loaded from its source."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:pipeline/pii/canonical.py"], check=True,
                            capture_output=True).stdout
    path = pathlib.Path(tempfile.mkdtemp(prefix="cf-overmask-")) / "canonical_before.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("canonical_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def texts(skip: set[str]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(lines with = % & \\, pairs of lines the first ending in one '=') of the repository and the stdlib."""
    files = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md", ".json", ".html") and p.is_file()
             and ".venv" not in p.parts and ".git" not in p.parts and str(p.relative_to(ROOT)) not in skip]
    files += sorted(pathlib.Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))
    lines, pairs = [], []
    for path in files:
        try:
            rows = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        lines += [(str(path), row) for row in rows if any(c in row for c in "=%&\\")]
        pairs += [(str(path), rows[i] + "\n" + rows[i + 1]) for i in range(len(rows) - 1)
                  if rows[i].rstrip(" \t").endswith("=") and not rows[i].rstrip(" \t").endswith("==")]
    return lines, pairs


def kind(line: str, before: str, after: str) -> str:
    if "=?" in line and "?=" in line and "?=" not in after:
        return "encoded-word"
    if re.search(r"=[ \t]*\n", line) and not re.search(r"=[ \t]*\n", after):
        return "soft break"
    if before.count("=") != after.count("="):
        return "quoted-printable"
    if before.count("\\") != after.count("\\"):
        return "code escapes (octal, hex bytes, CSS, \\@)"
    return "other (Latin-1 bytes, form +)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="The commit whose view to compare with (e.g. 2e3a2d6).")
    parser.add_argument("--skip", action="append", default=[], metavar="PATH",
                        help="A repository file to leave out (relative to the root; repeatable).")
    parser.add_argument("--examples", type=int, default=20, help="Changed views to print, drawn at random.")
    parser.add_argument("--written-pass", action="store_true",
                        help="Instead: over every line whose view differs from the text, the scrubs that the "
                             "scrubber's pass over the text as written changes (what the view left unmasked).")
    parser.add_argument("--older-pass", action="store_true",
                        help="Instead: over every line whose view differs without its ambiguous readings, the scrubs "
                             "that the scrubber's pass over that restricted view changes.")
    args = parser.parse_args()

    from corpusforge.pipeline.pii import canonical as current
    from corpusforge.pipeline.pii import scrubber as scrubber_module
    from corpusforge.pipeline.pii.config import PIIConfig

    lines, pairs = texts(set(args.skip))
    if args.written_pass:
        written_pass(lines + pairs, scrubber_module, PIIConfig, current)
        return
    if args.older_pass:
        older_pass(lines + pairs, scrubber_module, PIIConfig, current)
        return
    before = other_view(args.against)
    changed = [(src, text) for src, text in lines + pairs
               if before.canonical(text).text != current.canonical(text).text]
    kinds = collections.Counter(kind(text, before.canonical(text).text, current.canonical(text).text)
                                for _, text in changed)
    print(f"lines with = % & \\: {len(lines):,}; line pairs ending '=': {len(pairs):,}; views changed: "
          f"{len(changed):,}")
    for name, count in kinds.most_common():
        print(f"  {name}: {count:,}")
    scrub = scrubber_module.Scrubber(PIIConfig(), salt="s" * 16)
    differing = []
    for src, text in changed:
        after = scrub.scrub(text).text
        saved = scrubber_module.canonical
        # the other commit's scrub: its view alone (a module from before ``ambiguous`` has no older view to add)
        scrubber_module.canonical = functools.partial(_alone, before.canonical)
        try:
            was = scrub.scrub(text).text
        finally:
            scrubber_module.canonical = saved
        if after != was:
            differing.append((src, text, was, after))
    print(f"scrubs changed: {len(differing):,}")
    for src, text, was, after in differing:
        print(f"  {src}: {text[:160]!r}\n    before: {was[:160]!r}\n    now:    {after[:160]!r}")
    random.seed(1)
    for src, text in random.sample(changed, min(args.examples, len(changed))):
        print(f"  view {src}: {text[:120]!r} -> {current.canonical(text).text[:120]!r}")


def _alone(view, text: str, ambiguous: bool = True):
    """``view(text)``, whatever ``ambiguous``: a scrub with that view alone."""
    return view(text)


def older_pass(texts_: list[tuple[str, str]], scrubber_module, config_type, current) -> None:
    """The scrubs that masking what the recognizers find in the view without its ambiguous readings (besides the full
    view's and the text as written's findings) changes, over the texts whose view differs from that restricted one."""
    scrub = scrubber_module.Scrubber(config_type(), salt="s" * 16)
    real = scrubber_module.canonical
    last = []

    def full_only(text: str, ambiguous: bool = True):  # the full view's object again: no older view to add
        if ambiguous:
            last[:] = [real(text)]
        return last[0]

    viewed = changed = 0
    for src, text in texts_:
        if current.canonical(text).text == current.canonical(text, ambiguous=False).text:
            continue
        viewed += 1
        with_pass = scrub.scrub(text).text
        scrubber_module.canonical = full_only
        try:
            without = scrub.scrub(text).text
        finally:
            scrubber_module.canonical = real
        if with_pass != without:
            changed += 1
            print(f"  {src}: {text[:160]!r}\n    full view: {without[:160]!r}\n    and older: {with_pass[:160]!r}")
    print(f"texts whose view differs without its ambiguous readings: {viewed:,}; scrubs the older view's pass "
          f"changes: {changed:,}")


def written_pass(texts_: list[tuple[str, str]], scrubber_module, config_type, current) -> None:
    """The scrubs that masking what the recognizers find in the text as written (besides the view's findings)
    changes, over the texts whose view is not the text itself."""
    scrub = scrubber_module.Scrubber(config_type(), salt="s" * 16)
    real = scrubber_module.written_additions
    viewed = changed = 0
    for src, text in texts_:
        if current.canonical(text).identity:
            continue
        viewed += 1
        with_pass = scrub.scrub(text).text
        scrubber_module.written_additions = lambda *_: []
        try:
            without = scrub.scrub(text).text
        finally:
            scrubber_module.written_additions = real
        if with_pass != without:
            changed += 1
            print(f"  {src}: {text[:160]!r}\n    view only: {without[:160]!r}\n    and as written: {with_pass[:160]!r}")
    print(f"texts whose view differs from them: {viewed:,}; scrubs the pass over the text as written changes: "
          f"{changed:,}")


if __name__ == "__main__":
    main()
