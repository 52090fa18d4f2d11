"""File helpers: owner-only directories for what holds text from before the PII stage."""
import os
import stat

from corpusforge.pipeline.core.files import make_private_dir


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_make_private_dir_is_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0)  # the most permissive umask: makedirs alone would give 0777 minus nothing
    try:
        make_private_dir(str(tmp_path / "a" / "b"))
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a" / "b") == 0o700


def test_make_private_dir_tightens_an_existing_directory(tmp_path):
    (tmp_path / "old").mkdir(mode=0o755)
    os.chmod(tmp_path / "old", 0o755)
    make_private_dir(str(tmp_path / "old"))
    assert _mode(tmp_path / "old") == 0o700
