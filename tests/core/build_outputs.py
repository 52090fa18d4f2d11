"""What two builds that should agree are compared on: their shards and stats, not timings."""
import json


def build_outputs(run_dir) -> dict:
    """Every shard of clean/, removed/ and rejected/ by relative path, and stats.json without its timing; of
    Beam's metrics the counters only (BatchElements' distributions are timings: adaptive batch sizes)."""
    out = {}
    for path in sorted(run_dir.rglob("*")):
        if path.is_file() and path.parent.name in ("clean", "removed", "rejected"):
            out[str(path.relative_to(run_dir))] = path.read_bytes()
    stats = json.loads((run_dir / "stats.json").read_text())
    stats.pop("timing")
    stats["metrics"] = stats["metrics"]["counters"]
    out["stats.json"] = stats
    return out
