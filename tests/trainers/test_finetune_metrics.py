"""The fine-tuning metrics are scikit-learn's, computed without it (docs/dependencies.md)."""
import random

import pytest

from corpusforge.trainers.finetune.metrics import classification_metrics


@pytest.mark.parametrize("seed", range(20))
def test_accuracy_and_macro_f1_equal_scikit_learns(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(seed)
    labels = rng.randint(2, 6)
    gold = [rng.randrange(labels) for _ in range(rng.randint(1, 60))]
    predicted = [g if rng.random() < 0.6 else rng.randrange(labels) for g in gold]
    ours = classification_metrics(gold, predicted, labels)
    present = sorted(set(gold) | set(predicted))  # a label never gold nor predicted is left out of the mean
    assert ours["val_accuracy"] == pytest.approx(metrics.accuracy_score(gold, predicted))
    assert ours["val_macro_f1"] == pytest.approx(metrics.f1_score(gold, predicted, labels=present, average="macro",
                                                                  zero_division=0))
