"""The Presidio side of the pre-screens (``corpusforge.pipeline.pii.screen``): a recognizer that only sees the
windows its screen selects. Importing this module imports Presidio."""
from __future__ import annotations

import bisect
import threading

from corpusforge.pipeline.pii import presidio  # noqa: F401  (first: Presidio without transformers and torch)
from presidio_analyzer import LocalRecognizer, RecognizerResult

from corpusforge.pipeline.pii.screen import SEPARATOR, ScanCache, ScreenSpec


class ScreenedRecognizer(LocalRecognizer):
    """Runs ``inner`` (a Presidio recognizer with a ``SCREEN``) only on the windows of its candidates.

    Registered in Presidio's registry in place of ``inner``. ``prepare(cache)`` lets the caller share one
    ``ScanCache`` across recognizers; ``analyze`` falls back to scanning itself. What was prepared is the calling
    thread's (one engine serves every thread of a worker: ``engine.shared_engine``).
    """

    def __init__(self, inner, spec: ScreenSpec):
        self.inner = inner
        self.spec = spec
        self._local = threading.local()  # .prepared: (text, windows) for this thread's next analyze
        super().__init__(supported_entities=list(inner.supported_entities),
                         supported_language=inner.supported_language, name=f"Screened{inner.name}")

    def load(self) -> None:
        self.inner.load()

    def prepare(self, cache: ScanCache) -> list[tuple[int, int]]:
        return self.prepared(cache.text, self.spec.windows(cache))

    def prepared(self, text: str, windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Hand over the windows of ``text`` that the caller computed, for the ``analyze`` call that follows."""
        self._local.prepared = (text, windows)
        return windows

    def analyze(self, text, entities, nlp_artifacts=None):
        prepared = getattr(self._local, "prepared", None)
        if prepared is not None and prepared[0] is text:
            windows = prepared[1]
        else:
            windows = self.spec.windows(ScanCache(text))
        if not windows:
            return []
        if windows == [(0, len(text))]:
            return self._own(self.inner.analyze(text, entities, nlp_artifacts))
        # One call over the windows joined by SEPARATOR (Presidio's per-call cost dominates short windows),
        # then each result is moved back to its window's place in the text.
        offsets, pieces, at = [], [], 0
        for start, end in windows:
            offsets.append((at, at + end - start, start - at))
            pieces.append(text[start:end])
            at += end - start + len(SEPARATOR)
        results = self.inner.analyze(SEPARATOR.join(pieces), entities, nlp_artifacts)
        starts = [o[0] for o in offsets]
        for result in results:
            lo, hi, shift = offsets[bisect.bisect_right(starts, result.start) - 1]
            if result.end > hi:  # cannot happen: no token holds a newline; keep the guarantee explicit
                raise AssertionError(f"{self.name}: a result crossed a window separator")
            result.start += shift
            result.end += shift
        return self._own(results)

    def _own(self, results):
        for result in results:
            result.recognition_metadata[RecognizerResult.RECOGNIZER_IDENTIFIER_KEY] = self.id
        return results
