import pytest

from corpusforge.config import Config, load_config
from corpusforge.core.config_loader import ConfigError, field_docs, parse_override


def test_defaults_load_without_a_file():
    config = load_config()
    assert isinstance(config, Config)
    assert config.output.run_dir == "runs/latest"
    assert config.beam.runner == "DirectRunner"


def test_set_overrides_parse_values_as_yaml():
    config = load_config(overrides=["output.shard_target_mb=2.5", "normalize.enabled=false",
                                    "inputs=[{path: a.jsonl, text_field: body}]"])
    assert config.output.shard_target_mb == 2.5
    assert config.normalize.enabled is False
    assert config.inputs[0].path == "a.jsonl" and config.inputs[0].text_field == "body"


def test_exponent_floats_without_a_dot_are_numbers():
    assert load_config(overrides=["output.shard_target_mb=5e-1"]).output.shard_target_mb == 0.5


def test_unknown_key_names_the_key_and_the_allowed_ones():
    with pytest.raises(ConfigError, match=r"unknown key output\.shard_mb; did you mean output\.shard_target_mb\?"):
        load_config(overrides=["output.shard_mb=3"])
    with pytest.raises(ConfigError, match=r"unknown key output\.xyz; allowed keys in output: .*shard_target_mb"):
        load_config(overrides=["output.xyz=3"])


def test_literal_error_lists_allowed_values():
    with pytest.raises(ConfigError, match=r"normalize\.unicode_form: 'NFD' is not allowed; choose one of 'NFC', 'NFKC', 'none'"):
        load_config(overrides=["normalize.unicode_form=NFD"])


def test_wrong_type_and_range_are_reported_with_the_key():
    with pytest.raises(ConfigError, match=r"output\.overwrite: expected true or false"):
        load_config(overrides=["output.overwrite=maybe"])
    with pytest.raises(ConfigError, match=r"output\.shard_target_mb must be > 0"):
        load_config(overrides=["output.shard_target_mb=0"])


def test_yaml_and_toml_files_give_the_same_config(tmp_path):
    (tmp_path / "c.yaml").write_text("output:\n  run_dir: runs/x\ninputs:\n  - path: data/*.jsonl\n")
    (tmp_path / "c.toml").write_text('[output]\nrun_dir = "runs/x"\n[[inputs]]\npath = "data/*.jsonl"\n')
    assert load_config(tmp_path / "c.yaml") == load_config(tmp_path / "c.toml")


def test_file_errors_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.ini").write_text("x")
    with pytest.raises(ConfigError, match="unknown config format"):
        load_config(tmp_path / "bad.ini")


def test_override_without_equals_is_rejected():
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_override("dedup.enabled")


def test_every_stage_can_be_switched_off_and_every_field_is_documented():
    config = load_config(overrides=[f"{s}.enabled=false" for s in
                                    ("normalize", "quality", "dedup", "pii", "tokenizer", "tokenize", "train")])
    assert not any(getattr(config, s).enabled for s in ("normalize", "quality", "dedup", "pii"))
    undocumented = [key for key, _, _, help_text in field_docs(Config) if not help_text]
    assert undocumented == []


# --- a config cannot exhaust the machine ----------------------------------------------------------------------
BOMB = "\n".join(["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
                 + [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]) + "\n"


def test_a_yaml_alias_bomb_is_refused_before_it_grows(tmp_path):
    """In a subprocess held to 1 GiB and 60 CPU seconds: expanding the aliases would take ~25 GB."""
    import subprocess
    import sys

    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 700  # 9**9 = 387 million strings once expanded
    flow = "{" + BOMB.replace("\n", ", ").rstrip(", ") + "}"
    script = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
              "resource.setrlimit(resource.RLIMIT_CPU, (60, 60))\n"
              "from corpusforge.config import load_config\n"
              "from corpusforge.core.config_loader import ConfigError\n"
              "for args in ((sys.argv[1], []), (None, ['beam.options=' + sys.argv[2]])):\n"
              "    try:\n"
              "        load_config(*args)\n"
              "    except ConfigError as exc:\n"
              "        print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(path), flow], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-1000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all("more than 100,000 values once YAML aliases" in line for line in lines), lines


@pytest.mark.parametrize("text, match", [
    ("a: &a [*a]\n", "refers to a node that contains it"),
    ("x: " + "[" * 200 + "]" * 200 + "\n", "nested deeper"),
    ("train:\n  max_steps: " + "9" * 5000 + "\n", "invalid YAML|too large"),
    ("train:\n  max_steps: 99999999999999999999999\n", "too large for any setting"),
    ("train:\n  optim:\n    lr: .nan\n", "NaN"),
    ("? [a, b]\n: 1\n", "not a string|invalid YAML"),
    ("1: x\n", "not a string"),
])
def test_hostile_yaml_is_one_config_error(tmp_path, text, match):
    from corpusforge.config import load_config

    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match) as info:
        load_config(path)
    assert "\n" not in str(info.value)


def test_a_config_file_of_gigabytes_is_not_read(tmp_path):
    from corpusforge.config import load_config

    path = tmp_path / "big.yaml"
    with open(path, "wb") as f:
        f.truncate(5 << 30)  # sparse: 5 GB that are never read
    with pytest.raises(ConfigError, match="more than a config can be"):
        load_config(path)


@pytest.mark.parametrize("key", ["train.seed", "finetune.seed", "tokenizer.seed", "dedup.near.seed"])
def test_every_seed_setting_is_an_integer_every_generator_takes(key):
    # train.seed=-1 reached numpy's default_rng in a DataLoader worker: "ValueError: expected non-negative
    # integer", a traceback after the model was built; dedup.near.seed=2**32 datasketch's RandomState ("Seed must be
    # between 0 and 2**32 - 1"). Every generator's seed is 0 .. 2**32 - 1, as the seed flags are (cli.options.seed).
    for bad in (-1, 2**32):
        with pytest.raises(ConfigError, match=rf"{key} must be an integer from 0 to 2\*\*32 - 1, got {bad}"):
            load_config(None, [f"{key}={bad}"])
    assert load_config(None, [f"{key}={2**32 - 1}"]) is not None


@pytest.mark.parametrize("key", ["tokenize.split_seed", "tokenize.mixture_seed"])
def test_a_seed_that_keys_a_hash_takes_any_64_bit_integer(key):
    # they key BLAKE2b with 8 signed bytes: -1 always worked and must keep reproducing an old split or mixture
    assert load_config(None, [f"{key}=-1"]) is not None and load_config(None, [f"{key}={-2**63 + 1}"]) is not None
    with pytest.raises(ConfigError, match=r"is too large for any setting"):
        load_config(None, [f"{key}={2**63}"])
