"""``RUN/README.md``: the run directory as a Hugging Face dataset, and what the run is.

Its YAML ``configs`` make ``datasets.load_dataset(RUN)`` return the clean corpus (config ``default``) and
``load_dataset(RUN, "removed" | "rejected" | "tokens")`` the other outputs, streaming included; without it,
``datasets`` guesses from the file tree and took the token shards for the corpus. The text below the YAML says
where the data came from and how much of it survived, from ``manifest.json`` and ``stats.json``: names and
counts, never document text. The build writes it with clean/; tokenize rewrites it with the ``tokens`` config.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from corpusforge.core import files

CARD = "README.md"
# datasets picks its reader from these suffixes: arrow (IPC stream or file), parquet, json (.zst/.gz decompressed).
_PATTERNS = ("part-*.arrow", "part-*.parquet", "part-*.jsonl.zst", "part-*.jsonl.gz", "part-*.jsonl")


def _pattern(run_dir: str, directory: str) -> str | None:
    """The glob of the shards in ``RUN/directory`` (one format per directory), or None when there are none."""
    for pattern in _PATTERNS:
        if files.match(files.join(files.escape(files.join(run_dir, *directory.split("/"))), pattern)):
            return f"{directory}/{pattern}"
    return None


def card_configs(run_dir: str, tokens: bool) -> list[dict[str, Any]]:
    """The ``configs`` of the card: default (clean/), removed, rejected, and tokens when ``tokens``."""
    configs = []
    for name, directory in (("default", "clean"), ("removed", "removed"), ("rejected", "rejected")):
        pattern = _pattern(run_dir, directory)
        if pattern:
            configs.append({"config_name": name, "data_files": [{"split": "train", "path": pattern}],
                            **({"default": True} if name == "default" else {})})
    # datasets takes one reader for all configs, from the first config's files: token shards (Arrow) only go
    # with Arrow clean shards; beside Parquet or JSON Lines, the card says how to load them instead.
    if tokens and configs and configs[0]["data_files"][0]["path"].endswith(".arrow"):
        splits = [{"split": split, "path": pattern} for split, directory in (("train", "tokens/train"),
                                                                             ("validation", "tokens/val"))
                  if (pattern := _pattern(run_dir, directory))]
        if splits:
            configs.append({"config_name": "tokens", "data_files": splits})
    return configs


def card_text(configs: list[dict[str, Any]], manifest: dict[str, Any], stats: dict[str, Any],
              tokens: dict[str, Any] | None) -> str:
    """The card: YAML ``configs`` and a description made of names and counts only."""
    import yaml

    header = yaml.safe_dump({"configs": configs, "tags": ["corpusforge"]}, sort_keys=False)
    accounting = stats.get("accounting", {})
    config_sha = config_fingerprint(manifest.get("config", {}))
    fmt = manifest.get("format", {"name": "arrow", "compression": "none"})
    lines = [
        "---", header.rstrip("\n"), "---", "",
        "# corpusforge run", "",
        f"A text corpus cleaned by corpusforge {manifest.get('corpusforge_version', '')} (stages: "
        f"{', '.join(manifest.get('stages', [])) or 'none'}), in {fmt['name']} shards (compression: "
        f"{fmt['compression']}).", "",
        "| records | count |", "| --- | ---: |",
        *(f"| {key} | {accounting[key]:,} |" for key in ("input", "kept", "removed", "rejected") if key in accounting),
        "",
    ]
    # datasets refuses to load a split with no rows ('Instruction "train" corresponds to no data!'), and a clean input
    # has no rejected records: say so rather than show a line that raises
    empty = [name for name, key in (("default", "kept"), ("removed", "removed"), ("rejected", "rejected"))
             if accounting.get(key) == 0]
    if empty:
        lines += [", ".join(f"`{name}`" for name in empty) + " (no records): `load_dataset` refuses an empty split; "
                  "with `streaming=True` it gives no rows.", ""]
    by_stage = stats.get("sources") or []
    if by_stage:
        read, kept = by_stage[0].get("by", {}), by_stage[-1].get("by", {})
        lines += ["| source | documents read | documents kept |", "| --- | ---: | ---: |"]
        lines += [f"| {name} | {read[name]['documents']:,} | {kept.get(name, {}).get('documents', 0):,} |"
                  for name in sorted(read)]
        lines.append("")
    reasons = [(f"{stage}: {reason}", n) for stage, entry in stats.get("removed", {}).get("by_stage", {}).items()
               for reason, n in entry.get("reasons", {}).items()]
    if reasons:
        lines += ["Removed by " + ", ".join(f"{r} ({n:,})" for r, n in sorted(reasons, key=lambda kv: (-kv[1], kv[0])))
                  + ".", ""]
    if tokens:
        in_card = any(c["config_name"] == "tokens" for c in configs)
        lines += ["Token shards: " + ", ".join(
            f"{split} {s.get('tokens', 0):,} tokens in {s.get('documents', 0):,} documents"
            for split, s in tokens.get("splits", {}).items()) + "." + ("" if in_card else (
                ' `datasets` reads one format per card, so load them with load_dataset("arrow", data_files={"train": '
                '"RUN_DIR/tokens/train/*.arrow", "validation": "RUN_DIR/tokens/val/*.arrow"}).')), ""]
    lines += [
        f"Fingerprints: clean/ (SHA-256 of its shards) `{manifest.get('corpus_fingerprint', '')}`; the configuration "
        f"(SHA-256 of manifest.json's config but the run directory and the runner) `{config_sha}`.", "",
        "```python",
        "from datasets import load_dataset",
        *(['clean = load_dataset(RUN_DIR, split="train")                   # the clean corpus']
          if "default" not in empty else []),
        *(['removed = load_dataset(RUN_DIR, "removed", split="train")      # what the stages removed, with reasons']
          if "removed" not in empty else []),
        *(['rejected = load_dataset(RUN_DIR, "rejected", split="train")    # bad input records, with reasons']
          if "rejected" not in empty else []),
        'stream = load_dataset(RUN_DIR, split="train", streaming=True)  # without reading it all',
        *(['tokens = load_dataset(RUN_DIR, "tokens")                     # train and validation token ids']
          if tokens and any(c["config_name"] == "tokens" for c in configs) else []),
        "```", "",
    ]
    return "\n".join(lines)


def config_fingerprint(config: dict[str, Any]) -> str:
    """SHA-256 of a build's configuration as manifest.json records it, without what does not change the data: the
    run directory, ``output.overwrite``, ``output.disk_shuffle_mb`` (shuffles on disk or in memory: the same bytes)
    and the Beam section (every runner writes the same bytes)."""
    data = {key: value for key, value in config.items() if key != "beam"}
    data["output"] = {k: v for k, v in data.get("output", {}).items()
                      if k not in ("run_dir", "overwrite", "disk_shuffle_mb")}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _token_manifest(path: str) -> dict[str, Any] | None:
    """tokens/manifest.json when it is one (splits of documents and tokens); None for a damaged or foreign one,
    which the card leaves out (the corpus it describes is not the token shards': the trainer refuses them)."""
    try:
        found = files.read_json(path)
    except (OSError, ValueError, RecursionError):
        return None
    splits = found.get("splits") if isinstance(found, dict) else None
    if not isinstance(splits, dict) or not all(
            isinstance(s, dict) and all(isinstance(s.get(k, 0), int) for k in ("documents", "tokens"))
            for s in splits.values()):
        return None
    return found


def write_card(directory: str, tokens_root: str | None = None) -> None:
    """Write ``directory/README.md`` from the ``manifest.json`` and ``stats.json`` there, atomically. With
    ``tokens_root``, a run directory whose ``tokens/`` holds a finished tokenize of this clean/, the card has a
    ``tokens`` config (paths relative to ``directory``, where tokens/ is or will be)."""
    manifest = files.read_json(files.join(directory, "manifest.json"))
    stats = files.read_json(files.join(directory, "stats.json"))
    tokens = None
    configs = card_configs(directory, tokens=False)
    if tokens_root and files.exists(files.join(tokens_root, "tokens", "manifest.json")):
        tokens = _token_manifest(files.join(tokens_root, "tokens", "manifest.json"))
    if tokens is not None:
        configs += [c for c in card_configs(tokens_root, tokens=True) if c["config_name"] == "tokens"]
    files.write_bytes_atomic(files.join(directory, CARD), card_text(configs, manifest, stats, tokens).encode("utf-8"))
