"""One build as the fuzz families run it, and the promise every one of them checks: the counts add up.

Shared by the families that end a case with a build (readers, columnar_cells, record_cost...): a build that
raises (but for ``NothingKept``, a build whose every record was rejected, whose counts are checked the same),
or whose accounting does not balance (input = kept + removed + rejected) or does not count the records
the case wrote, or that was published having rejected half its input records or kept under 1 % of them without a
``warning:`` line (or with one otherwise), is a broken promise and raises ``AssertionError`` naming it.
"""
from __future__ import annotations

import io
from typing import Any


def accounted_build(base: dict[str, Any], expected_input: int | None = None, what: str = "written") -> Any:
    """Run ``corpusforge build`` on the config ``base`` (one worker, no progress) and check its accounting.

    ``expected_input``: the number of input records the case wrote (``what`` names where that number came
    from in the message), or None to check only the balance. Returns the build's result."""
    from corpusforge.config import load_config
    from corpusforge.pipeline.build import BuildResult, NothingKept, run_build

    try:
        result = run_build(load_config(None, [], base=base), ["--direct_num_workers=1"], out=io.StringIO(),
                           progress=False)
    except NothingKept as exc:  # every record rejected (or none): refused with one line, its counts still checked
        result = BuildResult("", exc.stats, {})
        if result.stats["accounting"]["kept"] or result.stats["accounting"]["removed"]:
            raise AssertionError(f"the build refused to publish a run that kept documents: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - the promise under test
        raise AssertionError(f"the build raised: {type(exc).__name__}: {str(exc)[:300]}") from exc
    accounting = result.stats["accounting"]
    if result.manifest and not accounting["kept"] and not accounting["removed"]:
        raise AssertionError(f"a build that read no usable record was published: {accounting}")
    if accounting["input"] != accounting["kept"] + accounting["removed"] + accounting["rejected"]:
        raise AssertionError(f"counts do not add up: {accounting}")
    # a crawl's non-HTML responses and redirects are rejected by design: neither a loss nor counted in the input
    routine = sum(n for reason, n in result.stats["rejected"]["reasons"].items()
                  if reason in ("warc_not_html", "warc_http_status"))
    considered = accounting["input"] - routine
    extreme = considered > 0 and ((accounting["rejected"] - routine) * 2 >= considered
                                  or accounting["kept"] * 100 < considered)
    if result.manifest and extreme != bool(result.warnings):  # a published build that lost most of its input says so
        raise AssertionError(f"a build with {accounting} printed warnings {result.warnings}")
    if expected_input is not None and accounting["input"] != expected_input:
        raise AssertionError(f"the build counted {accounting['input']} input records, {expected_input} {what}")
    return result
