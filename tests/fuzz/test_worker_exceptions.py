"""CI slice of the ``worker_exceptions`` fuzz family (``tests/fuzz/worker_exceptions.py``): an exception raised in
a DataLoader worker ends ``corpusforge train`` as it does raised in the main process; one raised in a build stage's
step stops the build with one line when it is the environment's, and rejects the records that raised when it is theirs."""
from __future__ import annotations

import random

import pytest

from tests.fuzz.worker_exceptions import loader_case, stage_case

# What each seed raises in the worker (all but 0, 7 and 4 ended otherwise than in the main process before
# worker_errors kept errno and file names, and rebuilt the types torch cannot: checked): 0 a UserError, 7
# ValueError('bad window'), 1 EDQUOT on a file name with a backslash (printed escaped), 37 ENOSPC on a name holding ": '" (named
# "a file"), 18 EDQUOT with two file names, 14 EACCES on a name holding " -> ", 66 EPERM with two names, the first
# holding " -> ", 3 MemoryError() (the worker's traceback as the message), 4 MemoryError('cannot allocate 8 GiB'), 5 and 23 UnicodeDecodeError (torch re-raised it as a RuntimeError), 34 ValueError('') (no ": " on its
# last line), 9 KeyboardInterrupt in the worker alone (a RuntimeError traceback; now one line).
SEEDS = [0, 7, 1, 37, 18, 14, 66, 3, 4, 5, 23, 34, 9]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_an_exception_in_a_data_loader_worker_ends_the_command_as_in_the_main_process(seed, tmp_path):
    loader_case(random.Random(seed), tmp_path)


# A build stage's step raising on 1-3 records (stage_case). Environment errors, each filed as rejected stage_error
# records before (checked: fail on the old faults.py): 1 EDQUOT without a name as a RuntimeError's cause (the run
# directory named), 2 EDQUOT, 14 EPIPE, 20 EROFS as a cause, 21 ENFILE as a cause, 28 EACCES, 31 EIO; 3 a
# ScratchError on a name holding ' (passed before too: a WorkerError). Content errors, still rejected: 0 MemoryError,
# 5 RecursionError, 7 UnicodeDecodeError, 9 an errno-less OSError, 13 a ValueError quoting "[Errno 28]", 17 ENOENT.
STAGE_SEEDS = [1, 2, 3, 14, 20, 21, 28, 31, 0, 5, 7, 9, 13, 17]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", STAGE_SEEDS)
def test_an_environment_error_in_a_stage_stops_the_build_and_a_content_error_rejects_its_record(seed, tmp_path):
    stage_case(random.Random(seed), tmp_path)
