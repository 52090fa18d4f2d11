"""ELECTRA (Clark et al., 2020): a small masked-LM generator fills the masked positions with its own samples and a
discriminator learns, at every position, whether the token it sees was replaced. Architecture only: the masking
comes from objectives.py (the ``rtd`` objective is masked LM's inputs and labels).

    model = ReplacedTokenDetection(d_cfg, generator_config(d_cfg, fraction=0.25), sample_vocab_size=v)
    logits, loss = model(input_ids, labels=labels)  # generator logits; loss = generator MLM + weight x detection
    detection_metrics(model.detection_sums)         # the two halves' losses and the discriminator's accuracy

Both halves are ``Transformer`` encoders. With shared embeddings (the paper's default) the generator reads the
discriminator's token, position and segment embeddings and their norm, at the discriminator's width, and
projects them to its own (``ModelConfig.embedding_size``), as transformers' ``ElectraForMaskedLM`` does.
Downstream, only the discriminator is kept.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn
import torch.nn.functional as F

from corpusforge.trainers.model import ModelConfig, Transformer


def generator_config(discriminator: ModelConfig, fraction: float, share_embeddings: bool = True) -> ModelConfig:
    """The generator: the discriminator's depth at ``fraction`` of its width (ELECTRA: a quarter for Small, a third
    for Base), heads of 64 dimensions (at least one), an MLP 4x as wide, and BERT's MLM head."""
    width = max(1, int(round(discriminator.d_model * fraction)))
    heads = max(1, width // 64)
    heads = heads if width % heads == 0 else 1
    return dataclasses.replace(
        discriminator, d_model=width, n_heads=heads, d_ff=4 * width, head_transform=True, output_bias=True,
        tie_embeddings=True, sentence_head=False,
        embedding_size=discriminator.d_model if share_embeddings and width != discriminator.d_model else None)


def discriminator_config(cfg: ModelConfig) -> ModelConfig:
    """The discriminator is an encoder without a language-model head (its head is one logit per position)."""
    return dataclasses.replace(cfg, head_transform=False, output_bias=False, tie_embeddings=True,
                               sentence_head=False, embedding_size=None)


class ReplacedTokenDetection(nn.Module):
    """Generator + discriminator trained jointly: loss = generator MLM loss + ``discriminator_weight`` x the mean
    binary cross-entropy of "replaced?" over the attended positions (ELECTRA's lambda, 50 in the paper)."""

    def __init__(self, discriminator: ModelConfig, generator: ModelConfig, *, share_embeddings: bool = True,
                 discriminator_weight: float = 50.0, sample_vocab_size: int | None = None):
        super().__init__()
        self.cfg, self.generator_cfg = discriminator, generator
        self.share_embeddings, self.discriminator_weight = share_embeddings, discriminator_weight
        self.sample_vocab_size = sample_vocab_size or generator.vocab_size
        self.detection_sums: torch.Tensor | None = None  # of the last forward with labels: see detection_metrics
        self.discriminator = Transformer(discriminator)
        self.generator = Transformer(generator)
        if share_embeddings:  # one set of embedding modules, registered under both names
            ours, theirs = self.discriminator, self.generator
            theirs.tok_emb = ours.tok_emb
            for name in ("pos_emb", "seg_emb", "emb_norm"):
                if getattr(ours.encoder, name, None) is not None:
                    setattr(theirs.encoder, name, getattr(ours.encoder, name))
        d = discriminator.d_model
        # transformers' ElectraDiscriminatorPredictions: dense, the blocks' activation, one logit.
        self.detector = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
        for layer in (self.detector[0], self.detector[2]):
            nn.init.normal_(layer.weight, std=discriminator.init_std)
            nn.init.zeros_(layer.bias)

    @property
    def tok_emb(self) -> nn.Embedding:
        return self.discriminator.tok_emb

    def num_params(self, trainable_only: bool = True) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def detect(self, input_ids, *, attention_mask=None, segment_ids=None) -> torch.Tensor:
        """The discriminator's logit of "replaced" at every position (batch, length)."""
        h = self.discriminator.hidden(input_ids, attention_mask=attention_mask, segment_ids=segment_ids)
        return self.detector(h).squeeze(-1)

    def forward(self, input_ids, labels=None, *, attention_mask=None, segment_ids=None):
        """Generator logits (batch, length, vocab) and the combined loss (None without labels).

        Replacements are drawn from the generator's softmax by the Gumbel-max trick (no gradient flows through
        the sample, as in the paper) over the tokenizer's ids only; a sample equal to the original counts as
        original. No shape depends on the data, so the step compiles to one graph."""
        logits, generator_loss = self.generator(input_ids, labels, attention_mask=attention_mask,
                                                segment_ids=segment_ids)
        if labels is None:
            return logits, None
        masked = labels != -100
        original = torch.where(masked, labels, input_ids)
        with torch.no_grad():
            scores = logits.detach().float()
            scores = scores.masked_fill(torch.arange(scores.size(-1), device=scores.device)
                                        >= self.sample_vocab_size, float("-inf"))
            noise = torch.rand_like(scores).clamp(min=1e-9)
            sampled = (scores - torch.log(-torch.log(noise))).argmax(-1)
            corrupted = torch.where(masked, sampled, input_ids)
        replaced = (corrupted != original).float()
        detection = self.detect(corrupted, attention_mask=attention_mask, segment_ids=segment_ids).float()
        weight = attention_mask.float() if attention_mask is not None else torch.ones_like(replaced)
        detection_loss = (F.binary_cross_entropy_with_logits(detection, replaced, reduction="none") * weight).sum()
        detection_loss = detection_loss / weight.sum().clamp(min=1.0)
        with torch.no_grad():  # kept for the log beside the combined loss; no host sync here
            positions, count = weight.sum(), masked.sum().float()
            self.detection_sums = torch.stack([
                generator_loss.detach().float() * count, count, detection_loss.detach() * positions, positions,
                (((detection > 0).float() == replaced).float() * weight).sum(), (replaced * weight).sum()])
        return logits, generator_loss + self.discriminator_weight * detection_loss


def detection_metrics(sums) -> dict[str, float]:
    """What ``detection_sums`` (added over batches and processes) mean: the generator's masked-LM loss, the
    discriminator's loss and accuracy over the attended positions, and the share of them replaced (the accuracy
    of always answering "original" is 1 minus that)."""
    generator, masked, detection, positions, correct, replaced = (float(x) for x in sums)
    return {"generator_loss": generator / max(masked, 1.0), "discriminator_loss": detection / max(positions, 1.0),
            "discriminator_accuracy": correct / max(positions, 1.0), "replaced_share": replaced / max(positions, 1.0)}
