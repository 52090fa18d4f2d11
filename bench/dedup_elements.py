"""How many Beam elements each step of the dedup stage emits, on the in-process DirectRunner (#38: every element
costs its coding, framing and dispatch whatever it holds, so a step that emits one per document, per key or per
drop is where the per-document machinery goes).

    python bench/dedup_elements.py                    # 2,500 distinct web-like documents, the stage's defaults
    python bench/dedup_elements.py --docs 5000 --top 30 --set joins=shuffle

The documents are bench/build.py's ``distinct`` corpus, made in memory; the stage runs alone with side-input joins
(``joins: auto`` on the DirectRunner) and a spill directory, as in a build. Prints the element count of every
PCollection that got at least one element, largest first, with the transform that made it.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import distinct_texts  # noqa: E402


def _value(text: str):
    """A ``--set`` value as YAML would read it: a boolean, an integer, a float, else the string."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2500)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A dedup setting (dotted below dedup), e.g. joins=shuffle or near.enabled=false.")
    args = parser.parse_args()

    import apache_beam as beam
    from apache_beam.metrics import monitoring_infos
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from corpusforge.core.config_loader import from_dict
    from corpusforge.pipeline.dedup import Dedup, DedupConfig
    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.document_coder import document_coders
    from corpusforge.pipeline.stage import StageContext

    overrides: dict = {}
    for item in args.set:
        key, _, value = item.partition("=")
        *parents, leaf = key.split(".")
        node = overrides
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _value(value)
    config = from_dict(DedupConfig, overrides)
    texts = distinct_texts(random.Random(0), 1)
    docs = [Document(f"d{i:08d}", next(texts), "web") for i in range(args.docs)]
    with tempfile.TemporaryDirectory() as spill, document_coders():
        pipeline = beam.Pipeline(runner=FnApiRunner())
        _ = (pipeline | beam.Create(docs, reshuffle=False)
             | Dedup(config, StageContext(direct_runner=True, spill_dir=spill)))
        result = pipeline.run()
        result.wait_until_finish()
    counts: collections.Counter = collections.Counter()
    for info in result.monitoring_infos():
        if info.urn == monitoring_infos.ELEMENT_COUNT_URN:
            counts[info.labels.get(monitoring_infos.PCOLLECTION_LABEL)] += monitoring_infos.extract_counter_value(info)
    made_by = {pcoll: f"{t.unique_name} [{tag}]" for t in pipeline.to_runner_api().components.transforms.values()
               if not t.subtransforms for tag, pcoll in t.outputs.items()}
    print(f"{args.docs:,} documents; dedup settings {args.set or 'default'}; elements per PCollection, largest first:")
    for pcoll, count in counts.most_common(args.top):
        print(f"{count:9,d}  {made_by.get(pcoll, pcoll)}")


if __name__ == "__main__":
    main()
