"""Accuracy and macro-F1 of predicted label ids."""
from __future__ import annotations


def classification_metrics(gold: list[int], predicted: list[int], num_labels: int) -> dict[str, float]:
    """``val_accuracy`` and ``val_macro_f1`` (the unweighted mean of each label's F1; a label never gold nor
    predicted is left out of the mean)."""
    if not gold:
        return {"val_accuracy": 0.0, "val_macro_f1": 0.0}
    accuracy = sum(g == p for g, p in zip(gold, predicted)) / len(gold)
    scores = []
    for label in range(num_labels):
        tp = sum(g == label and p == label for g, p in zip(gold, predicted))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted))
        if tp + fp + fn:
            scores.append(2 * tp / (2 * tp + fp + fn))
    return {"val_accuracy": accuracy, "val_macro_f1": sum(scores) / len(scores) if scores else 0.0}
