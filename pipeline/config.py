"""The build's configuration: inputs, output, runner and one section per cleaning stage.

Sections are dataclasses owned by their stage's package; this module only assembles them. The whole run's
configuration (the build plus tokenizer, tokenize and train) is ``corpusforge.config.Config``.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from corpusforge.core.beam_options import BeamConfig
from corpusforge.core.config_loader import check, setting
from corpusforge.core.fault_config import FaultConfig
from corpusforge.core.input_files import record_limit
from corpusforge.core.shard_files import ShardFormat
from corpusforge.pipeline.dedup.config import DedupConfig
from corpusforge.pipeline.normalize.config import NormalizeConfig
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.quality.config import QualityConfig

InputFormat = Literal["auto", "jsonl", "parquet", "arrow", "text", "warc", "html"]


@dataclasses.dataclass
class InputConfig:
    path: str = setting(help="File, directory or glob (local or any Beam filesystem, e.g. gs://).")
    name: str = setting("", "Source name stored on each document; default: the file stem.")
    format: InputFormat = setting("auto", "auto picks by extension: .jsonl/.json(.gz/.zst), .parquet, .arrow/.feather, .txt, .warc(.gz), .html/.htm")
    text_field: str = setting("text", "Field holding the text (jsonl/parquet/arrow).")
    id_field: str = setting("id", "Field holding the id; missing ids become a stable hash of path and position.")
    text_unit: Literal["file", "line"] = setting("file", "For text files: one document per file, or per non-empty line.")
    html_extractor: Literal["resiliparse", "trafilatura"] = setting("resiliparse", "Main-text extraction for warc/html inputs: resiliparse (fast) or trafilatura (pip install "
                          "'corpusforge[trafilatura]'; 17-21x slower, see docs/web.md).")

    weight: float = setting(1.0, "Sampling weight of this source in the token shards' mixture: with "
                                       "tokenize.target_tokens, the source gets target_tokens x weight / (sum of the "
                                       "sources' weights) train tokens (repeating or dropping whole documents). "
                                       "Needs a name; sources no input names weigh 1.")

    def __post_init__(self) -> None:
        check(bool(self.path), "inputs[].path must not be empty")
        check(self.weight >= 0 and self.weight != float("inf"), f"inputs[].weight must be >= 0, got {self.weight}")
        check(self.weight == 1.0 or bool(self.name),
              f"inputs[].weight ({self.weight:g}) for {self.path} needs inputs[].name: the weight belongs to a named source")


@dataclasses.dataclass
class OutputConfig:
    run_dir: str = setting("runs/latest", "Directory of the run: clean/, removed/, rejected/, tokenizer/, tokens/, model/.")
    overwrite: bool = setting(False, "Replace a non-empty existing output instead of refusing.")
    shard_target_mb: float = setting(128.0, "Target size of one clean shard, in MB of text.")
    format: Literal["arrow", "parquet", "jsonl"] = setting("parquet", "File format of clean/, removed/ and rejected/: parquet (default; zstd, row groups of "
                          "~64 MB with statistics: datasets, pyarrow, DuckDB, polars and Spark open it), arrow (IPC "
                          "stream, uncompressed: datasets.Dataset.from_file and pyarrow memory-map it; DuckDB and "
                          "polars.scan_ipc do not open it) or jsonl. Token shards stay Arrow IPC files.")
    compression: Literal["auto", "zstd", "gzip", "none"] = setting("auto", "Compression of parquet and jsonl shards (auto: zstd; jsonl shards are named .jsonl.zst, "
                          ".jsonl.gz or .jsonl). Arrow shards are never compressed.")
    write_removed: bool = setting(True, "Write removed documents to removed/ for audit.")
    write_rejected: bool = setting(True, "Write rejected input records to rejected/.")
    max_doc_chars: int = setting(10_000_000, "Records with longer text are rejected as oversize_record.")
    max_record_bytes: int = setting(0, "The most bytes one line of a JSONL or text input may take, enforced while reading, "
                                    "before decoding and parsing: a longer line is rejected as oversize_record after at "
                                    "most this many bytes (plus a 1 MiB buffer) were held. Also the most decoded bytes "
                                    "one Parquet or Arrow row may take: a larger row is rejected as oversize_record "
                                    "without being converted (docs/inputs.md: what is decoded first). 0: 6 x "
                                    "max_doc_chars + 1 MiB (room for a text of max_doc_chars characters written as JSON "
                                    "escapes, and its metadata). evaluate, embed, finetune and predict read user "
                                    "files under the same limit (a larger record skipped, or refused in one line).")
    max_metadata_depth: int = setting(64, "The deepest a record may nest objects and arrays (the record itself is level "
                                          "1); a deeper one is rejected as too_deep when read, so no later step "
                                          "(pickling, JSON writing) meets it.")
    stage_checkpoints: bool = setting(False, "Run each stage as its own Beam pipeline and keep its output in RUN/.checkpoints, so a failed "
                          "build resumes (`build --resume`) from the last completed stage. Costs one extra write and "
                          "read of the corpus per stage.")
    hash_remote_files: bool = setting(False, "With stage checkpoints, fingerprint remote (gs://, s3://...) input, eval-set, word-list and "
                          "model files by their content (sha256, one more read of each) rather than their size and "
                          "modification time; local files are always hashed.")
    spill_text: bool = setting(True, "Keep document text in spill files under the run directory while Beam shuffles only "
                          "references, so a local build's memory grows with the number of documents, not their "
                          "text; near-dedup's signatures and band records wait there too. Applies when output.run_dir is "
                          "local; "
                          "remote runners shuffle on disk themselves.")
    disk_shuffle_mb: float = setting(64.0, "With spill_text, a build whose input files total more than this many MB of "
                                     "text (compressed files, Parquet included, count 5x their size) keeps its shuffles on local disk "
                                     "(partitioned runs beside the spilled text) instead of in memory, so its peak "
                                     "memory stays flat as the corpus grows. 0: always. Below it Beam's in-memory "
                                     "shuffle starts faster (~0.3 CPU s of a one-document build) and holds little. The "
                                     "outputs are the same bytes either way. `corpusforge tokenize` does the same "
                                     "for clean shards totalling more than this, on a local runner.")

    def __post_init__(self) -> None:
        check(self.shard_target_mb > 0, f"output.shard_target_mb must be > 0, got {self.shard_target_mb}")
        check(self.max_doc_chars > 0, f"output.max_doc_chars must be > 0, got {self.max_doc_chars}")
        check(self.max_record_bytes >= 0, f"output.max_record_bytes must be >= 0, got {self.max_record_bytes}")
        check(self.disk_shuffle_mb >= 0, f"output.disk_shuffle_mb must be >= 0, got {self.disk_shuffle_mb}")
        check(2 <= self.max_metadata_depth <= 200,
              f"output.max_metadata_depth must be between 2 and 200 (deeper fails pickling), got {self.max_metadata_depth}")
        check(self.format != "arrow" or self.compression in ("auto", "none"),
              f"output.compression={self.compression} does not apply to Arrow shards, which stay uncompressed so "
              "readers memory-map them; set output.format=parquet or jsonl to compress")

    @property
    def shard_format(self) -> ShardFormat:
        return ShardFormat(self.format, self.compression)

    @property
    def record_bytes(self) -> int:
        """The most bytes one record may take (``max_record_bytes``, or its default from ``max_doc_chars``): the
        build's readers' limit, and that of every other command that reads user files (evaluate, embed,
        finetune, predict)."""
        return record_limit(self.max_doc_chars, self.max_record_bytes)


@dataclasses.dataclass
class BuildConfig:
    """What ``corpusforge build`` reads: the inputs, the output, the runner and every cleaning stage's section.

    A stage's section is declared here under the stage's ``section`` name (see ``corpusforge.pipeline.stage.Stage``)."""

    inputs: list[InputConfig] = setting(help="Input sources.", factory=list)
    output: OutputConfig = setting(factory=OutputConfig)
    build: FaultConfig = setting(factory=FaultConfig)
    beam: BeamConfig = setting(factory=BeamConfig)
    normalize: NormalizeConfig = setting(factory=NormalizeConfig)
    quality: QualityConfig = setting(factory=QualityConfig)
    dedup: DedupConfig = setting(factory=DedupConfig)
    pii: PIIConfig = setting(factory=PIIConfig)

    @property
    def run_dir(self) -> str:
        return self.output.run_dir


__all__ = ["BeamConfig", "BuildConfig", "FaultConfig", "InputConfig", "NormalizeConfig", "OutputConfig"]
