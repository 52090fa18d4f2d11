"""What a line or sentence key record costs held, coded and decoded: ``KeysByShard``'s column packs against the
``(key, node)`` tuple lists the packs were before.

    python bench/key_packs.py                  # 3,000 documents x 30 keys, ids like the build's ("web/d00000042")
    python bench/key_packs.py --docs 20000 --keys 10

For each layout: the bytes a record takes held in the DoFn until its packs leave and in the packs as they
leave (tracemalloc; the nodes, built before, not counted), the bytes it takes coded by the build's coder
(``DocumentCoder``: what a shuffle holds or writes to disk), and the CPU time to code and decode it (best of 5;
a shared machine moves it, the bytes do not). Keys are random signed 64-bit ints, one in 20 drawn from 300 common ones.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from corpusforge.pipeline.dedup.lines import KEY_SHARDS, KeysByShard  # noqa: E402
from corpusforge.pipeline.document_coder import DocumentCoder  # noqa: E402


def documents(count: int, keys: int, seed: int = 0) -> list[tuple]:
    rng = random.Random(seed)
    common = [rng.getrandbits(64) - (1 << 63) for _ in range(300)]
    return [((rng.randint(0, 1), -rng.random(), f"web/d{n:08d}"),
             list({rng.choice(common) if rng.random() < 0.05 else rng.getrandbits(64) - (1 << 63)
                   for _ in range(keys)}))
            for n in range(count)]


def tuple_packs(docs: list[tuple]) -> list[tuple]:
    """The layout before: ``(shard, [(key, node)...])``, one tuple per record."""
    packs: collections.defaultdict[int, list] = collections.defaultdict(list)
    for node, keys in docs:
        for key in keys:
            packs[key % KEY_SHARDS].append((key, node))
    return sorted(packs.items())


def held_columns(docs: list[tuple]) -> KeysByShard:
    """What ``KeysByShard`` holds until its packs leave."""
    fn = KeysByShard()
    fn.start_bundle()
    for node, keys in docs:
        fn.add(keys, node)
    return fn


def column_packs(docs: list[tuple]) -> list[tuple]:
    return held_columns(docs).packs()


def traced_bytes(make, docs: list[tuple]) -> int:
    """The bytes that ``make(docs)``'s result holds (tracemalloc: what it allocated and did not free)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    made = make(docs)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del made
    return held


def best(function, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--keys", type=int, default=30, help="keys drawn per document (distinct ones kept)")
    args = parser.parse_args()
    docs = documents(args.docs, args.keys)
    records = sum(len(keys) for _, keys in docs)
    coder = DocumentCoder().get_impl()
    print(f"{args.docs} documents, {records} key records, {KEY_SHARDS} shards")
    print(f"{'layout':>8} {'held B/rec':>10} {'packs B/rec':>11} {'coded B/rec':>11} {'encode ns/rec':>13} "
          f"{'decode ns/rec':>13}")
    for name, hold, make in (("tuples", tuple_packs, tuple_packs), ("columns", held_columns, column_packs)):
        held, made = traced_bytes(hold, docs), traced_bytes(make, docs)
        packs = make(docs)
        encoded = [coder.encode(pack) for pack in packs]
        assert [coder.decode(data) for data in encoded] == packs
        encode = best(lambda: [coder.encode(pack) for pack in packs])
        decode = best(lambda: [coder.decode(data) for data in encoded])
        print(f"{name:>8} {held / records:10.1f} {made / records:11.1f} {sum(map(len, encoded)) / records:11.1f} "
              f"{encode / records * 1e9:13.0f} {decode / records * 1e9:13.0f}")


if __name__ == "__main__":
    main()
