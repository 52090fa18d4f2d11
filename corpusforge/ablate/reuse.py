"""Stage reuse between an ablation's builds: a build starts from the longest run of stages it shares with an
earlier build (same stages in the same order, same configuration up to there, same input and model files).

Every ablation build runs with stage checkpoints and keeps them (``run_build(keep_checkpoints=True)``). Before
the next build, ``seed_checkpoints`` hard-links the matching stage checkpoints of the best earlier build (and its
run secret, so the PII hashes of reused and new stages agree) into the new build's checkpoints
(``rundir.link_checkpoints``); the build
then resumes after them, exactly as ``corpusforge build --resume`` does, so its output is the output of a build
from scratch. Checkpoints hold text from before the PII stage: ``drop_checkpoints`` deletes them once every
build is done.
"""
from __future__ import annotations

import os

from corpusforge.core import rundir
from corpusforge.core.run_lock import run_lock
from corpusforge.pipeline.config import BuildConfig
from corpusforge.pipeline.build import Segment, is_complete, plan_segments, run_build


def _shared_prefix(mine: list[Segment], theirs: list[Segment]) -> int:
    """How many leading segments of ``mine`` the earlier build completed with the same fingerprint."""
    count = 0
    for a, b in zip(mine, theirs):
        same = os.path.basename(a.directory) == os.path.basename(b.directory) and a.fingerprint == b.fingerprint
        if not (same and is_complete(b)):
            break
        count += 1
    return count


def seed_checkpoints(config: BuildConfig, build_dir: str, earlier: dict[str, BuildConfig]) -> tuple[str, list[str]] | None:
    """Link into ``build_dir/.checkpoints`` the longest run of leading stages that one of the ``earlier`` builds
    (``{build_dir: its config}``) completed with this build's fingerprints. Returns (the build reused, its
    stage names) or None when no stage is shared."""
    mine = plan_segments(config, rundir.checkpoints_dir(build_dir), checkpoint=True)
    if is_complete(mine[0]):
        return None  # an interrupted build of its own: it resumes from its own checkpoints and run secret
    best, best_count = None, 0
    for other_dir, other_config in earlier.items():
        theirs = plan_segments(other_config, rundir.checkpoints_dir(other_dir), checkpoint=True)
        count = _shared_prefix(mine, theirs)
        if count > best_count:
            best, best_count = (other_dir, theirs), count
    if best is None:
        return None
    other_dir, theirs = best
    with run_lock(build_dir, "ablate"):  # build_dir's marker records the links: changed under its lock, as every marker
        rundir.link_checkpoints(other_dir, build_dir, [(source.directory, segment.directory)
                                                       for segment, source in zip(mine[:best_count], theirs[:best_count])])
    return other_dir, [name for segment in mine[:best_count] for name in segment.stages]


def drop_checkpoints(build_dirs: list[str]) -> None:
    for build_dir in build_dirs:
        with run_lock(build_dir, "ablate"):
            rundir.drop_checkpoints(build_dir)


def build_reusing_stages(config: BuildConfig, build_dir: str, earlier: dict[str, BuildConfig], beam_args: list[str] | None = None,
                         out=None, progress: bool = True) -> tuple[str, list[str]] | None:
    """Build ``config`` into ``build_dir`` starting after the stages it shares with one of the ``earlier`` builds
    (``{build_dir: config}``, updated with this one), keeping its stage checkpoints for the builds after it.
    Returns what ``seed_checkpoints`` reused. ``config`` is changed: stage checkpoints on, ``build_dir`` its run
    directory."""
    config.output.run_dir, config.output.overwrite, config.output.stage_checkpoints = build_dir, True, True
    seeded = seed_checkpoints(config, build_dir, earlier)
    if seeded and out is not None:
        print(f"ablate:   reusing stage{'s' if len(seeded[1]) > 1 else ''} {', '.join(seeded[1])} of build "
              f"{os.path.basename(seeded[0])}", file=out, flush=True)
    run_build(config, beam_args, out=out, progress=progress, resume=True, keep_checkpoints=True)
    earlier[build_dir] = config
    return seeded
