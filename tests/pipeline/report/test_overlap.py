"""The shared text of a near-duplicate and its survivor, bounded in size."""
import time

from corpusforge.pipeline.report.overlap import MAX_CHARS, shared_text


def _text(runs):
    return "".join(text for text, _ in runs)


def _marked(runs):
    return [text.strip() for text, shared in runs if shared]


def test_marks_the_words_both_share_in_order():
    removed = "The quick brown fox jumps over the lazy dog. Copied from a mirror."
    survivor = "Breaking: the quick brown fox jumps over the lazy dog."
    overlap = shared_text(removed, survivor)
    assert _text(overlap.removed) == removed and _text(overlap.survivor) == survivor  # nothing lost or added
    assert _marked(overlap.removed) == ["quick brown fox jumps over the lazy dog."]
    assert _marked(overlap.survivor) == ["quick brown fox jumps over the lazy dog."]
    assert not any(shared for text, shared in overlap.removed if "mirror" in text)
    shared = len("quick brown fox jumps over the lazy dog. ")
    assert abs(overlap.shared_share - shared / len(removed)) < 1e-9


def test_line_breaks_and_spaces_are_the_same_text():
    overlap = shared_text("one two\nthree", "one two three")
    assert _marked(overlap.removed) == ["one two\nthree"] and overlap.shared_share == 1.0


def test_nothing_shared_and_empty_texts():
    assert _marked(shared_text("alpha beta", "gamma delta").removed) == []
    empty = shared_text("", "")
    assert empty.removed == [] and empty.shared_share == 0.0


def test_long_documents_are_cut_so_the_comparison_stays_fast():
    words = " ".join(f"w{i % 997}" for i in range(40_000))  # ~200k characters, many repeats (difflib's worst case)
    start = time.perf_counter()
    overlap = shared_text(words, "x " + words)
    elapsed = time.perf_counter() - start
    assert len(_text(overlap.removed)) <= MAX_CHARS and len(_text(overlap.survivor)) <= MAX_CHARS
    assert overlap.shared_share > 0.95
    assert elapsed < 30  # a loose bound: uncut, this comparison takes minutes
