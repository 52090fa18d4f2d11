"""The one configuration of a corpusforge run: every stage's section, loaded from one file and the CLI.

    config = load_config("corpus.yaml", overrides=["dedup.enabled=false"])

Sections are dataclasses owned by their stage's package; this module only assembles them.
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Literal

from pipeline.configuration import ConfigError, apply_overrides, check, from_dict, load_file, to_dict
from pipeline.dedup.config import DedupConfig
from pipeline.pii.config import PIIConfig
from pipeline.quality.config import QualityConfig
from tokenizer.config import TokenizeConfig, TokenizerConfig
from trainers.config import TrainConfig

InputFormat = Literal["auto", "jsonl", "parquet", "arrow", "text"]


@dataclasses.dataclass
class InputConfig:
    path: str = dataclasses.field(metadata={"help": "File, directory or glob (local or any Beam filesystem, e.g. gs://)."})
    name: str = dataclasses.field(default="", metadata={"help": "Source name stored on each document; default: the file stem."})
    format: InputFormat = dataclasses.field(
        default="auto", metadata={"help": "auto picks by extension: .jsonl/.json(.gz/.zst), .parquet, .arrow/.feather, .txt"}
    )
    text_field: str = dataclasses.field(default="text", metadata={"help": "Field holding the text (jsonl/parquet/arrow)."})
    id_field: str = dataclasses.field(
        default="id", metadata={"help": "Field holding the id; missing ids become a stable hash of path and position."}
    )
    text_unit: Literal["file", "line"] = dataclasses.field(
        default="file", metadata={"help": "For text files: one document per file, or per non-empty line."}
    )

    def __post_init__(self) -> None:
        check(bool(self.path), "inputs[].path must not be empty")


@dataclasses.dataclass
class NormalizeConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Normalise text before every other stage."})
    unicode_form: Literal["NFC", "NFKC", "none"] = dataclasses.field(default="NFC", metadata={"help": "Unicode normal form."})
    strip_control: bool = dataclasses.field(default=True, metadata={"help": "Drop control and zero-width characters except newline and tab (U+2028 always becomes a newline, U+2029 a blank line)."})
    collapse_whitespace: bool = dataclasses.field(
        default=True, metadata={"help": "Collapse runs of spaces, trim lines, keep at most one blank line."}
    )


@dataclasses.dataclass
class OutputConfig:
    run_dir: str = dataclasses.field(default="runs/latest", metadata={"help": "Directory of the run: clean/, removed/, rejected/, tokenizer/, tokens/, model/."})
    overwrite: bool = dataclasses.field(default=False, metadata={"help": "Replace a non-empty existing output instead of refusing."})
    shard_target_mb: float = dataclasses.field(default=128.0, metadata={"help": "Target size of one clean shard, in MB of text."})
    write_removed: bool = dataclasses.field(default=True, metadata={"help": "Write removed documents to removed/ for audit."})
    write_rejected: bool = dataclasses.field(default=True, metadata={"help": "Write rejected input records to rejected/."})
    max_doc_chars: int = dataclasses.field(default=10_000_000, metadata={"help": "Records with longer text are rejected as oversize_record."})
    stage_checkpoints: bool = dataclasses.field(
        default=False,
        metadata={"help": "Run each stage as its own Beam pipeline and keep its output in RUN/.checkpoints, so a failed "
                          "build resumes (`build --resume`) from the last completed stage. Costs one extra write and "
                          "read of the corpus per stage."})
    spill_text: bool = dataclasses.field(
        default=True,
        metadata={"help": "Keep document text in spill files under the run directory while Beam shuffles only "
                          "references, so a local build's memory grows with the number of documents, not their "
                          "text; near-dedup's signatures and band records wait there too. Applies when output.run_dir is "
                          "local; "
                          "remote runners shuffle on disk themselves."})

    def __post_init__(self) -> None:
        check(self.shard_target_mb > 0, f"output.shard_target_mb must be > 0, got {self.shard_target_mb}")
        check(self.max_doc_chars > 0, f"output.max_doc_chars must be > 0, got {self.max_doc_chars}")


@dataclasses.dataclass
class BeamConfig:
    runner: str = dataclasses.field(
        default="DirectRunner",
        metadata={"help": "Beam runner: DirectRunner, PortableRunner, DataflowRunner, SparkRunner, FlinkRunner, or a dotted class path."},
    )
    options: dict[str, Any] = dataclasses.field(
        default_factory=dict,
        metadata={"help": "Any Beam pipeline options, e.g. {direct_num_workers: 2, temp_location: gs://...}; CLI flags after the subcommand's own pass through too. An option no Beam options class knows is an error (with a did-you-mean)."},
    )


@dataclasses.dataclass
class Config:
    inputs: list[InputConfig] = dataclasses.field(default_factory=list, metadata={"help": "Input sources."})
    output: OutputConfig = dataclasses.field(default_factory=OutputConfig)
    beam: BeamConfig = dataclasses.field(default_factory=BeamConfig)
    normalize: NormalizeConfig = dataclasses.field(default_factory=NormalizeConfig)
    quality: QualityConfig = dataclasses.field(default_factory=QualityConfig)
    dedup: DedupConfig = dataclasses.field(default_factory=DedupConfig)
    pii: PIIConfig = dataclasses.field(default_factory=PIIConfig)
    tokenizer: TokenizerConfig = dataclasses.field(default_factory=TokenizerConfig)
    tokenize: TokenizeConfig = dataclasses.field(default_factory=TokenizeConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)

    @property
    def run_dir(self) -> str:
        return self.output.run_dir


def load_config(path: str | pathlib.Path | None = None, overrides: list[str] | None = None,
                base: dict[str, Any] | None = None) -> Config:
    """Load ``path`` (YAML/TOML) over ``base``, apply ``--set`` overrides, validate, return a ``Config``."""
    data: dict[str, Any] = dict(base or {})
    if path:
        data = _merge(data, load_file(path))
    data = apply_overrides(data, overrides or [])
    return from_dict(Config, data)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


__all__ = ["Config", "ConfigError", "InputConfig", "load_config", "to_dict"]
