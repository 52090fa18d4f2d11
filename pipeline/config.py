"""The build's configuration: inputs, output, runner and one section per cleaning stage.

Sections are dataclasses owned by their stage's package; this module only assembles them. The whole run's
configuration (the build plus tokenizer, tokenize and train) is ``corpusforge.config.Config``.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from corpusforge.core.beam_options import BeamConfig
from corpusforge.core.config_loader import check
from corpusforge.core.shard_files import ShardFormat
from corpusforge.pipeline.dedup.config import DedupConfig
from corpusforge.pipeline.normalize.config import NormalizeConfig
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.quality.config import QualityConfig

InputFormat = Literal["auto", "jsonl", "parquet", "arrow", "text", "warc", "html"]


@dataclasses.dataclass
class InputConfig:
    path: str = dataclasses.field(metadata={"help": "File, directory or glob (local or any Beam filesystem, e.g. gs://)."})
    name: str = dataclasses.field(default="", metadata={"help": "Source name stored on each document; default: the file stem."})
    format: InputFormat = dataclasses.field(
        default="auto", metadata={"help": "auto picks by extension: .jsonl/.json(.gz/.zst), .parquet, .arrow/.feather, .txt, .warc(.gz), .html/.htm"}
    )
    text_field: str = dataclasses.field(default="text", metadata={"help": "Field holding the text (jsonl/parquet/arrow)."})
    id_field: str = dataclasses.field(
        default="id", metadata={"help": "Field holding the id; missing ids become a stable hash of path and position."}
    )
    text_unit: Literal["file", "line"] = dataclasses.field(
        default="file", metadata={"help": "For text files: one document per file, or per non-empty line."}
    )
    html_extractor: Literal["resiliparse", "trafilatura"] = dataclasses.field(
        default="resiliparse",
        metadata={"help": "Main-text extraction for warc/html inputs: resiliparse (fast) or trafilatura (pip install "
                          "'corpusforge[trafilatura]'; 17-21x slower, see docs/web.md)."})

    weight: float = dataclasses.field(
        default=1.0, metadata={"help": "Sampling weight of this source in the token shards' mixture: with "
                                       "tokenize.target_tokens, the source gets target_tokens x weight / (sum of the "
                                       "sources' weights) train tokens (repeating or dropping whole documents). "
                                       "Needs a name; sources no input names weigh 1."})

    def __post_init__(self) -> None:
        check(bool(self.path), "inputs[].path must not be empty")
        check(self.weight >= 0 and self.weight != float("inf"), f"inputs[].weight must be >= 0, got {self.weight}")
        check(self.weight == 1.0 or bool(self.name),
              f"inputs[].weight ({self.weight:g}) for {self.path} needs inputs[].name: the weight belongs to a named source")


@dataclasses.dataclass
class OutputConfig:
    run_dir: str = dataclasses.field(default="runs/latest", metadata={"help": "Directory of the run: clean/, removed/, rejected/, tokenizer/, tokens/, model/."})
    overwrite: bool = dataclasses.field(default=False, metadata={"help": "Replace a non-empty existing output instead of refusing."})
    shard_target_mb: float = dataclasses.field(default=128.0, metadata={"help": "Target size of one clean shard, in MB of text."})
    format: Literal["arrow", "parquet", "jsonl"] = dataclasses.field(
        default="parquet",
        metadata={"help": "File format of clean/, removed/ and rejected/: parquet (default; zstd, row groups of "
                          "~64 MB with statistics: datasets, pyarrow, DuckDB, polars and Spark open it), arrow (IPC "
                          "stream, uncompressed: datasets.Dataset.from_file and pyarrow memory-map it; DuckDB and "
                          "polars.scan_ipc do not open it) or jsonl. Token shards stay Arrow IPC files."})
    compression: Literal["auto", "zstd", "gzip", "none"] = dataclasses.field(
        default="auto",
        metadata={"help": "Compression of parquet and jsonl shards (auto: zstd; jsonl shards are named .jsonl.zst, "
                          ".jsonl.gz or .jsonl). Arrow shards are never compressed."})
    write_removed: bool = dataclasses.field(default=True, metadata={"help": "Write removed documents to removed/ for audit."})
    write_rejected: bool = dataclasses.field(default=True, metadata={"help": "Write rejected input records to rejected/."})
    max_doc_chars: int = dataclasses.field(default=10_000_000, metadata={"help": "Records with longer text are rejected as oversize_record."})
    stage_checkpoints: bool = dataclasses.field(
        default=False,
        metadata={"help": "Run each stage as its own Beam pipeline and keep its output in RUN/.checkpoints, so a failed "
                          "build resumes (`build --resume`) from the last completed stage. Costs one extra write and "
                          "read of the corpus per stage."})
    hash_remote_files: bool = dataclasses.field(
        default=False,
        metadata={"help": "With stage checkpoints, fingerprint remote (gs://, s3://...) input, eval-set, word-list and "
                          "model files by their content (sha256, one more read of each) rather than their size and "
                          "modification time; local files are always hashed."})
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
        check(self.format != "arrow" or self.compression in ("auto", "none"),
              f"output.compression={self.compression} does not apply to Arrow shards, which stay uncompressed so "
              "readers memory-map them; set output.format=parquet or jsonl to compress")

    @property
    def shard_format(self) -> ShardFormat:
        return ShardFormat(self.format, self.compression)


@dataclasses.dataclass
class FaultConfig:
    """What a build does with a record that makes a stage raise (a bug, or input no rule foresaw)."""

    fail_fast: bool = dataclasses.field(
        default=False,
        metadata={"help": "Fail the run on the first record that makes a stage raise, with its traceback (for "
                          "debugging; CLI --fail-fast). Off: such a record is rejected with reason stage_error and "
                          "detail '<stage>: <ExceptionType>: <message>', and the build goes on."})
    max_error_fraction: float = dataclasses.field(
        default=0.001,
        metadata={"help": "Fail the run after the pipeline when more than this fraction of the input records, and "
                          "more than error_allowance records, were rejected as stage_error (a systematic bug, not "
                          "one odd record); nothing is published. 1 never fails; 0 fails on any only with "
                          "error_allowance 0."})
    error_allowance: int = dataclasses.field(
        default=5,
        metadata={"help": "This many stage_error rejections never fail a run, whatever its size, so one odd record "
                          "does not fail a small build (0.001 of 200 records is less than one); "
                          "max_error_fraction applies above it. 0: the fraction alone decides."})

    def __post_init__(self) -> None:
        check(0.0 <= self.max_error_fraction <= 1.0,
              f"build.max_error_fraction must be between 0 and 1, got {self.max_error_fraction}")
        check(self.error_allowance >= 0, f"build.error_allowance must be 0 or more, got {self.error_allowance}")

    def tolerates(self, failed: int, records: int) -> bool:
        """Whether ``failed`` stage_error rejections among ``records`` input records leave the run publishable."""
        return failed <= max(self.error_allowance, self.max_error_fraction * records)


@dataclasses.dataclass
class BuildConfig:
    """What ``corpusforge build`` reads: the inputs, the output, the runner and every cleaning stage's section.

    A stage's section is declared here under the stage's ``section`` name (see ``corpusforge.pipeline.stage.Stage``)."""

    inputs: list[InputConfig] = dataclasses.field(default_factory=list, metadata={"help": "Input sources."})
    output: OutputConfig = dataclasses.field(default_factory=OutputConfig)
    build: FaultConfig = dataclasses.field(default_factory=FaultConfig)
    beam: BeamConfig = dataclasses.field(default_factory=BeamConfig)
    normalize: NormalizeConfig = dataclasses.field(default_factory=NormalizeConfig)
    quality: QualityConfig = dataclasses.field(default_factory=QualityConfig)
    dedup: DedupConfig = dataclasses.field(default_factory=DedupConfig)
    pii: PIIConfig = dataclasses.field(default_factory=PIIConfig)

    @property
    def run_dir(self) -> str:
        return self.output.run_dir


__all__ = ["BeamConfig", "BuildConfig", "FaultConfig", "InputConfig", "NormalizeConfig", "OutputConfig"]
