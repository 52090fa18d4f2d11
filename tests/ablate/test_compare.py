"""The comparison math: paired seed interval, paired bootstrap over documents, verdict and budget."""
import math

import numpy as np
import pytest

from corpusforge.ablate import compare


def test_seed_interval_is_the_paired_t_interval():
    a, b = [3.10, 3.12, 3.14], [3.20, 3.21, 3.25]
    result = compare.seed_interval(a, b)
    diffs = [-0.10, -0.09, -0.11]
    sd = float(np.std(diffs, ddof=1))
    assert result["difference"] == pytest.approx(-0.10)
    assert result["sd"] == pytest.approx(sd)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2 dof)
    assert result["low"] == pytest.approx(-0.10 - half) and result["high"] == pytest.approx(-0.10 + half)
    assert compare.seed_interval([3.0], [3.1]) is None  # one seed: no spread
    with pytest.raises(ValueError):
        compare.seed_interval([3.0, 3.1], [3.0])


def test_paired_bootstrap_sees_a_consistent_gain_that_an_unpaired_view_would_miss():
    rng = np.random.default_rng(0)
    nbytes = rng.integers(200, 2000, size=200).astype(float)
    base = nbytes * rng.uniform(2.0, 4.0, size=200)  # documents differ a lot in difficulty
    better = base - 0.02 * nbytes  # every document 0.02 bits per byte easier
    result = compare.bootstrap_interval(better, base, nbytes)
    assert result["difference"] == pytest.approx(-0.02)
    assert result["high"] < 0 and result["low"] > -0.03
    assert result["documents"] == 200 and result["resamples"] == compare.RESAMPLES
    # fixed RNG seed: the same inputs give the same interval
    assert compare.bootstrap_interval(better, base, nbytes) == result
    noise = base + rng.normal(0, 1, size=200) * nbytes * 0.05  # no systematic difference
    unresolved = compare.bootstrap_interval(noise, base, nbytes)
    assert unresolved["low"] < 0 < unresolved["high"]


def test_bootstrap_interval_is_bits_per_byte_of_totals_not_mean_of_ratios():
    nbytes = np.array([100.0, 900.0])
    a, b = np.array([100.0, 900.0]), np.array([200.0, 900.0])
    # a: 1000 bits / 1000 bytes = 1.0; b: 1100 / 1000 = 1.1 (a mean of ratios would say -0.5)
    assert compare.bootstrap_interval(a, b, nbytes)["difference"] == pytest.approx(-0.1)


def test_verdict_needs_every_interval_on_one_side():
    below, above, across = {"low": -2, "high": -1}, {"low": 1, "high": 2}, {"low": -1, "high": 1}
    assert compare.verdict([below, below]) == compare.BETTER
    assert compare.verdict([above, None]) == compare.WORSE
    assert compare.verdict([below, across]) == compare.UNRESOLVED
    assert compare.verdict([below, above]) == compare.UNRESOLVED
    assert compare.verdict([None, None]) == compare.UNRESOLVED


def test_budget_scales_the_seed_standard_error_with_one_over_sqrt_tokens():
    seeds = {"difference": 0.004, "low": -0.02, "high": 0.028, "sd": 0.002, "se": 0.002 / math.sqrt(2), "seeds": 2}
    docs = {"se": 0.001, "documents": 100}
    need = compare.needed(0.01, 100_000, seeds, docs)
    half = 12.706204736174707 * seeds["se"]  # t(0.975, 1 dof) x se
    assert need["tokens_per_model"] == math.ceil(100_000 * (half / 0.01) ** 2)
    assert need["from"] == "seed spread"
    assert need["at_this_budget"] is False  # 12.7 x 0.0014 > 0.01
    assert compare.needed(0.1, 100_000, seeds, docs)["at_this_budget"] is True
    # seeds at this budget: the fewest n whose t(n-1) x sd / sqrt(n) < 0.01 (n=3: 4.30 x 0.002 / 1.73 = 0.005)
    assert need["seeds_at_this_budget"] == 3
    assert "heldout_documents" not in need  # 1.96 x 0.001 < 0.01: the held-out set is big enough
    small = compare.needed(0.001, 100_000, seeds, docs)
    assert small["heldout_documents"] == math.ceil(100 * (compare.Z * 0.001 / 0.001) ** 2)
    one_seed = compare.needed(0.01, 100_000, None, {"se": 0.01, "documents": 100})
    assert one_seed["tokens_per_model"] == math.ceil(100_000 * (compare.Z * 0.01 / 0.01) ** 2)
    assert one_seed["from"].startswith("bootstrap")
    assert compare.needed(0.0, 100_000, seeds, docs)["tokens_per_model"] is None


def test_compare_reports_a_budget_only_when_unresolved():
    rng = np.random.default_rng(1)
    nbytes = rng.integers(200, 2000, size=50).astype(float)
    base = np.stack([nbytes * rng.uniform(2, 4, size=50)] * 2)
    clear = compare.compare([3.0, 3.01], [3.5, 3.52], base - 0.5 * nbytes, base, nbytes, 10_000, 0.01)
    assert clear["verdict"] == compare.BETTER and "needed" not in clear
    vague = compare.compare([3.0, 3.02], [3.01, 3.0], base + rng.normal(0, 5, size=(2, 50)), base, nbytes, 10_000,
                            0.01)
    assert vague["verdict"] == compare.UNRESOLVED
    assert vague["needed"][0]["difference"] == 0.01 and vague["needed"][0]["tokens_per_model"] >= 10_000
    assert "seeds [" in compare.describe(vague) and "tokens per model" in compare.describe(vague)


def test_one_seed_verdicts_say_that_seed_noise_is_not_in_them():
    nbytes = np.full(40, 500.0)
    base = np.stack([nbytes * 3.0 + np.arange(40)])
    result = compare.compare([2.9], [3.0], base - 0.1 * nbytes, base, nbytes, 10_000, 0.01)
    assert result["seeds"] is None and result["verdict"] == compare.BETTER
    assert result["caveat"] == compare.ONE_SEED and "not the seed noise" in compare.describe(result)
    two = compare.compare([2.9, 2.91], [3.0, 3.0], np.stack([base[0]] * 2) - 0.1 * nbytes, np.stack([base[0]] * 2),
                          nbytes, 10_000, 0.01)
    assert "caveat" not in two
