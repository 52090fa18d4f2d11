"""Each source's way through a run, from stats.json and the counts of the shards."""
from corpusforge.pipeline.report.sources import source_funnel

STATS = {
    "funnel": [{"stage": "read"}, {"stage": "quality"}, {"stage": "dedup"}],
    "sources": [{"stage": "read", "by": {"web": {"documents": 10}, "books": {"documents": 5}}},
                {"stage": "quality", "by": {"web": {"documents": 6}, "books": {"documents": 5}}},
                {"stage": "dedup", "by": {"web": {"documents": 4}, "books": {"documents": 4}}}],
    "removed": {"total": 7}, "rejected": {"total": 3},
}


def test_counts_from_the_shards_add_up_per_source():
    sources, exact = source_funnel(
        STATS, clean={"web": (4, 400), "books": (4, 4000)},
        removed={("web", "quality"): 3, ("web", "dedup"): 2, ("books", "dedup"): 1},
        # web: two rejected at read, one document the quality stage raised on (also rejected)
        rejected={("web", True): 2, ("web", False): 1},
        tokens={("web", "train"): 90, ("books", "train"): 900, ("books", "val"): 50})
    assert exact and list(sources) == ["books", "web"]
    web, books = sources["web"], sources["books"]
    assert (web.input, web.rejected, web.removed, web.kept, web.kept_chars) == (12, 3, {"quality": 3, "dedup": 2}, 4, 400)
    assert web.tokens == {"train": 90} and books.tokens == {"train": 900, "val": 50}
    assert (books.input, books.rejected, books.removed, books.kept) == (5, 0, {"quality": 0, "dedup": 1}, 4)
    assert web.balanced and books.balanced


def test_without_removed_shards_removals_are_the_drops_across_stages():
    sources, exact = source_funnel(STATS, clean={}, removed=None, rejected=None, tokens={})
    assert not exact
    assert sources["web"].removed == {"quality": 4, "dedup": 2} and sources["web"].kept == 4
    assert sources["web"].rejected is None and sources["web"].input is None and sources["web"].balanced is None


def test_nothing_rejected_or_removed_needs_no_shards():
    stats = dict(STATS, removed={"total": 0}, rejected={"total": 0},
                 sources=[{"stage": s, "by": {"web": {"documents": 10}}} for s in ("read", "quality", "dedup")])
    sources, exact = source_funnel(stats, clean={}, removed=None, rejected=None, tokens={})
    assert exact and sources["web"].input == 10 and sources["web"].rejected == 0
    assert sources["web"].removed == {"quality": 0, "dedup": 0} and sources["web"].balanced
