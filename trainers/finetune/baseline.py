"""The bag-of-words baseline of ``classify``: TF-IDF features and a logistic regression (scikit-learn), trained
and scored on the same training and validation records as the model, so ``metrics.json`` shows at once whether
fine-tuning beat it."""
from __future__ import annotations

from corpusforge.trainers.finetune.metrics import classification_metrics


def _text(example) -> str:
    return example.text if example.pair is None else f"{example.text}\n{example.pair}"


def bag_of_words_baseline(train_examples, val_examples, labels: dict[str, int], seed: int = 0) -> dict[str, float]:
    """``val_accuracy`` and ``val_macro_f1`` of TF-IDF (words and bigrams, sublinear tf) + logistic regression on
    the validation examples (a pair's two texts joined)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    features = vectorizer.fit_transform([_text(e) for e in train_examples])
    classifier = LogisticRegression(max_iter=1000, random_state=seed)
    classifier.fit(features, [labels[e.target] for e in train_examples])
    predicted = classifier.predict(vectorizer.transform([_text(e) for e in val_examples])).tolist()
    return classification_metrics([labels[e.target] for e in val_examples], predicted, len(labels))
