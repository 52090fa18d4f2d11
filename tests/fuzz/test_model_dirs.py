"""CI slice of the ``model_dirs`` fuzz family (``tests/fuzz/model_dirs.py``): one file of an export or a fine-tune
output damaged; every command that loads it gives the undamaged output or one line."""
from __future__ import annotations

import random

import pytest

from tests.fuzz.model_dirs import fuzz_one

# The sources (three exports and a LoRA fine-tune, ~10 s) are made once per process. What each seed does:
# exports: 6 bert tokenizer_config.json a FIFO, 28 bert model.safetensors emptied, 86 bert an adapter_config.json
# added, 11 gpt2 an added_tokens.json added, 12 gpt2 model.safetensors a folder, 63 gpt2 generation_config.json a
# FIFO, 75 gpt2 generation_config.json's pad id edited, 0 gpt2 .corpusforge-run.json a dangling link (still loads);
# ELECTRA: 8 generator/model.safetensors a link to a config, 15 a bit of generator/tokenizer_config.json flipped,
# 26 generator/model.safetensors deleted, 33 generator/config.json deleted, 79 generator/corpusforge.json a FIFO,
# 101 generator/adapter_config.json added; fine-tune: 701 adapter/adapter_model.safetensors a FIFO (predict opened it
# and waited for ever before: checked, killed after 100 s), 280 adapter/adapter_config.json a FIFO, 169 adapter/model.safetensors.index.json added, 115 adapter/adapter_model.safetensors
# deleted, 16 merged/config.json a FIFO, 98 base/generation_config.json edited.
SEEDS = [6, 28, 86, 11, 12, 63, 75, 0, 8, 15, 26, 33, 79, 101, 701, 280, 169, 115, 16, 98]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_model_folder_gives_the_same_output_or_one_line(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
