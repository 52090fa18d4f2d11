"""CI slice of the ``broken_pipes`` fuzz family (``tests/fuzz/broken_pipes.py``): exit 141 quietly only when
standard output's reader went away; another broken pipe is one line, exit 2."""
from __future__ import annotations

import random

import pytest

from tests.fuzz.broken_pipes import fuzz_one

# What each seed draws: 1 and 3 stdout's reader gone after 261 / 937 of 6000 lines (141, quiet); 2, 15 and 22 a
# worker's pipe broken under a pipe read to the end (3, 0, 6000 lines); 5 under a terminal; 12 under /dev/null; 13
# under a file; 19 and 27 with standard output closed (`>&-`: a traceback from the 141 path before, which took a
# stdout it could not ask for one whose reader was gone: both failed on the old code); 6 a terminal, 14 a pipe,
# 20 a closed stdout, with nothing broken (exit 0).
# With the BrokenPipeError wrapped as Beam wraps it (after logging it), drawn since: 3 (stdout's reader gone, a
# worker's text), 22 and 27 (Beam's RuntimeError), 5, 12 and 13 (a worker's text) failed on the code before
# (exit 1, Beam's log and a traceback); 87 (stdout's reader gone, Beam's RuntimeError), 4 and 16 added.
SEEDS = [1, 3, 2, 15, 22, 5, 12, 13, 19, 27, 6, 14, 20, 87, 4, 16]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_only_standard_outputs_broken_pipe_ends_quietly(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
