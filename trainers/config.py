"""Configuration of model training: the `train` section, with one small section per component.

    train:
      objective: mlm            # mlm | rtd | span | bart | clm | prefixlm | bilm
      seq_len: 128
      model: {size: small, position: rope}
      mlm: {whole_word: true}
      optim: {lr: 5.0e-4, warmup_steps: 200}
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from corpusforge.core.config_loader import check, check_finite, setting

Objective = Literal["mlm", "rtd", "span", "bart", "clm", "prefixlm", "bilm"]


@dataclasses.dataclass
class TrainModelConfig:
    size: Literal["debug", "small", "base"] = setting("small", "Named size: debug (d=64, 2 layers), small (d=512, 6 layers, 8 heads), base (d=768, 12 layers, "
                "12 heads; BERT-base / GPT-2 124M / T5-base). elmo: debug, or small (allennlp's 2x1024 LSTM, "
                "128 projection, 2048 char-CNN filters, 1 highway).")
    family: Optional[Literal["bert", "gpt2", "t5", "bart", "elmo"]] = setting(None, "Architecture recipe; default from the objective: mlm/rtd->bert, clm/prefixlm->gpt2, span->t5, "
                "bart->bart, bilm->elmo (char-CNN + highway + biLSTM; only train.model.size and dropout apply).")
    position: Optional[Literal["learned", "sinusoidal", "rope", "relative"]] = setting(None, "Positions: learned absolute, sinusoidal, RoPE or T5 relative bias (default: the family's).")
    norm: Optional[Literal["layernorm", "rmsnorm"]] = setting(None, "Norm type (default: the family's).")
    norm_position: Optional[Literal["pre", "post"]] = setting(None, "Pre- or post-norm residuals (default: the family's).")
    activation: Optional[Literal["gelu", "gelu_tanh", "relu", "swiglu"]] = setting(None, "MLP activation (default: the family's): gelu is exact (BERT, BART), gelu_tanh the tanh approximation "
                "(GPT-2; transformers' gelu_new), relu (T5), swiglu (gated SiLU).")
    tie_embeddings: Optional[bool] = setting(None, "Share input and output embeddings (default: the family's).")
    bias: Optional[bool] = setting(None, "Biases in linear layers and norms (default: the family's).")
    d_model: Optional[int] = setting(None, "Override the size's width.")
    n_layers: Optional[int] = setting(None, "Override the size's layers (per stack).")
    n_heads: Optional[int] = setting(None, "Override the size's attention heads.")
    d_ff: Optional[int] = setting(None, "Override the size's MLP width.")
    dropout: float = setting(0.1, "Dropout on embeddings, attention and residual branches.")
    vocab_multiple: int = setting(64, "Round the model's vocabulary up to a multiple of this (faster matmuls; the extra rows are never targets).")

    def __post_init__(self) -> None:
        check(0.0 <= self.dropout < 1.0, f"train.model.dropout must be in [0, 1), got {self.dropout}")
        check(self.vocab_multiple >= 1, f"train.model.vocab_multiple must be >= 1, got {self.vocab_multiple}")
        for key in ("d_model", "n_layers", "n_heads", "d_ff"):
            value = getattr(self, key)
            check(value is None or value > 0, f"train.model.{key} must be > 0, got {value}")


@dataclasses.dataclass
class MLMConfig:
    probability: float = setting(0.15, "Share of (non-special) tokens predicted.")
    mask_ratio: float = setting(0.8, "Of the predicted tokens, share replaced by the mask token.")
    random_ratio: float = setting(0.1, "Of the predicted tokens, share replaced by a random token (the rest stay).")
    whole_word: bool = setting(False, "Mask all pieces of a word together.")
    span: bool = setting(False, "SpanBERT span masking: contiguous whole-word spans of geometric length.")
    span_p: float = setting(0.2, "Geometric parameter of SpanBERT span lengths (in words).")
    span_max: int = setting(10, "Longest SpanBERT span, in words.")
    nsp: bool = setting(False, "Next-sentence prediction (BERT): segment pairs, half with a random second segment.")
    sop: bool = setting(False, "Sentence-order prediction (ALBERT): two consecutive segments of one document, swapped half of the "
                "time (label 1); the rest of the window is left out and the example padded.")

    def __post_init__(self) -> None:
        check(0.0 < self.probability < 1.0, f"train.mlm.probability must be in (0, 1), got {self.probability}")
        check(0.0 <= self.mask_ratio and 0.0 <= self.random_ratio and self.mask_ratio + self.random_ratio <= 1.0,
              "train.mlm.mask_ratio and random_ratio must be >= 0 and sum to at most 1")
        check(0.0 < self.span_p < 1.0, f"train.mlm.span_p must be in (0, 1), got {self.span_p}")
        check(self.span_max >= 1, f"train.mlm.span_max must be >= 1, got {self.span_max}")
        check(not (self.nsp and self.sop), "train.mlm.nsp and train.mlm.sop share one pair classifier; "
              "turn one of them off")


@dataclasses.dataclass
class RTDConfig:
    generator_fraction: float = setting(0.25, "ELECTRA generator width as a share of the discriminator's (same depth; ELECTRA-Small 1/4, Base 1/3).")
    share_embeddings: bool = setting(True, "Generator and discriminator share token, position and segment embeddings (the paper's default).")
    discriminator_weight: float = setting(50.0, "Weight of the replaced-token detection loss in generator MLM + weight x detection (50 in the paper).")

    def __post_init__(self) -> None:
        check(0.0 < self.generator_fraction <= 1.0,
              f"train.rtd.generator_fraction must be in (0, 1], got {self.generator_fraction}")
        check(self.discriminator_weight > 0, f"train.rtd.discriminator_weight must be > 0, got {self.discriminator_weight}")


@dataclasses.dataclass
class SpanConfig:
    noise_density: float = setting(0.15, "Share of tokens corrupted (T5).")
    mean_span_length: float = setting(3.0, "Mean length of a corrupted span (T5).")

    def __post_init__(self) -> None:
        check(0.0 < self.noise_density < 1.0, f"train.span.noise_density must be in (0, 1), got {self.noise_density}")
        check(self.mean_span_length >= 1.0, f"train.span.mean_span_length must be >= 1, got {self.mean_span_length}")


@dataclasses.dataclass
class BARTConfig:
    infill_ratio: float = setting(0.3, "Text infilling: share of words in Poisson-length spans, each span one mask (0 = off).")
    poisson_lambda: float = setting(3.0, "Mean span length of text infilling.")
    permute_sentences: float = setting(1.0, "Share of sentences shuffled (0 = off).")
    mask_ratio: float = setting(0.0, "Token masking: share of tokens replaced by the mask token (0 = off).")
    delete_ratio: float = setting(0.0, "Token deletion: share of tokens deleted (0 = off).")
    rotate: float = setting(0.0, "Document rotation: probability of rotating to a random start (0 = off).")
    random_ratio: float = setting(0.1, "Share of masks replaced by a random token instead.")

    def __post_init__(self) -> None:
        for key in ("infill_ratio", "permute_sentences", "mask_ratio", "delete_ratio", "rotate", "random_ratio"):
            value = getattr(self, key)
            check(0.0 <= value <= 1.0, f"train.bart.{key} must be in [0, 1], got {value}")
        check(self.poisson_lambda > 0, f"train.bart.poisson_lambda must be > 0, got {self.poisson_lambda}")


@dataclasses.dataclass
class OptimConfig:
    lr: float = setting(3e-4, "Peak learning rate of AdamW.")
    min_lr_ratio: float = setting(0.1, "Final learning rate as a share of the peak.")
    schedule: Literal["cosine", "linear", "constant"] = setting("cosine", "Decay after warmup.")
    warmup_steps: int = setting(100, "Linear warmup steps.")
    weight_decay: float = setting(0.1, "AdamW decay on matrices and embeddings (never on biases or norms).")
    beta1: float = setting(0.9, "AdamW beta1.")
    beta2: float = setting(0.95, "AdamW beta2.")
    eps: float = setting(1e-8, "AdamW epsilon.")
    clip: float = setting(1.0, "Clip the global gradient norm to this (0 = off).")

    def __post_init__(self) -> None:
        check(self.lr > 0, f"train.optim.lr must be > 0, got {self.lr}")
        check(0.0 <= self.min_lr_ratio <= 1.0, f"train.optim.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        check(self.warmup_steps >= 0, f"train.optim.warmup_steps must be >= 0, got {self.warmup_steps}")
        check(self.weight_decay >= 0, f"train.optim.weight_decay must be >= 0, got {self.weight_decay}")
        check(0 <= self.beta1 < 1 and 0 <= self.beta2 < 1, "train.optim.beta1 and beta2 must be in [0, 1)")
        # 0: a parameter whose gradient is 0 divides its zero moment by sqrt(0) + 0, NaN at the first step
        check(self.eps > 0, f"train.optim.eps must be > 0, got {self.eps}")
        check(self.clip >= 0, f"train.optim.clip must be >= 0, got {self.clip}")


@dataclasses.dataclass
class TrainConfig:
    enabled: bool = setting(True, "Train a model in `demo`/full runs.")
    objective: Objective = setting("clm", "mlm (BERT masked LM), rtd (ELECTRA replaced-token detection, masking from train.mlm), span (T5 span corruption), bart (BART denoising), clm (GPT causal LM), "
                "prefixlm (bidirectional prefix, causal rest), bilm (ELMo forward + backward LM; tokenizer family elmo).")
    seq_len: int = setting(512, "Tokens per example (encoder input length for span/bart).")
    micro_batch_size: int = setting(16, "Examples per device per forward pass.")
    grad_accum: int = setting(1, "Micro-batches per optimizer step (global batch = micro x accum x devices).")
    max_steps: int = setting(1000, "Optimizer steps (the schedule's length).")
    eval_every: int = setting(200, "Evaluate on the val split every N steps (0 = only at the end).")
    eval_batches: int = setting(20, "Micro-batches per evaluation.")
    log_every: int = setting(10, "Log loss, tokens/s and MFU every N steps.")
    checkpoint_every: int = setting(500, "Checkpoint every N steps (and at the end).")
    keep_checkpoints: int = setting(2, "Checkpoints kept on disk (older ones are deleted).")
    resume: bool = setting(False, "Continue from the latest checkpoint in <run>/model.")
    init_from: str = setting("", "A local transformers checkpoint directory (GPT-2, Llama, BERT, T5 or BART layout, e.g. a corpusforge "
                "export) to continue pretraining from; its architecture replaces train.model.*, and the run must be "
                "tokenized with its tokenizer. Empty: start from random weights.")
    seed: int = setting(1234, "Seed of initialisation, shuffling and masking noise.")
    device: Literal["auto", "cpu", "cuda"] = setting("auto", "auto: cuda when available, else cpu.")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = setting("auto", "Autocast dtype: auto = bfloat16 on GPUs with native bfloat16 (Ampere and later), float16 on older "
                "GPUs (V100, T4), float32 on CPU; float16 uses a loss scaler.")
    compile: bool = setting(False, "torch.compile the model: fullgraph=True in one process and per block under FSDP; under DDP it "
                "compiles DDP(model), so DDP's bucketed all-reduce overlaps the backward pass.")
    data_parallel: Literal["ddp", "fsdp"] = setting("ddp", "With several processes: ddp replicates the model; fsdp shards parameters, gradients and optimizer "
                "state over them (fully_shard per block), for models that do not fit one device.")
    checkpoint_activations: bool = setting(False, "Recompute each block's activations in the backward pass instead of storing them (less memory, "
                "about a third more compute).")
    num_workers: int = setting(-1, "Data loader worker processes (-1: 0 on CPU, 4 on CUDA).")
    progress: bool = setting(True, "Show a progress bar (rank 0).")
    model: TrainModelConfig = setting(factory=TrainModelConfig)
    mlm: MLMConfig = setting(factory=MLMConfig)
    rtd: RTDConfig = setting(factory=RTDConfig)
    span: SpanConfig = setting(factory=SpanConfig)
    bart: BARTConfig = setting(factory=BARTConfig)
    optim: OptimConfig = setting(factory=OptimConfig)

    def __post_init__(self) -> None:
        check_finite(self, "train")  # every float setting, the nested sections' too: no infinity (lr=inf)
        check(self.seq_len >= 8, f"train.seq_len must be >= 8, got {self.seq_len}")
        for key in ("micro_batch_size", "grad_accum", "max_steps", "eval_batches", "log_every",
                    "checkpoint_every", "keep_checkpoints"):
            value = getattr(self, key)
            check(value >= 1, f"train.{key} must be >= 1, got {value}")
        check(self.eval_every >= 0, f"train.eval_every must be >= 0, got {self.eval_every}")
        check(self.num_workers >= -1, f"train.num_workers must be >= -1, got {self.num_workers}")
