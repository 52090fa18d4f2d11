"""The one atomic writer: temp + fsync + rename onto a regular file; nothing deleted first; temp removed."""
import errno
import os
import stat

import pyarrow as pa
import pytest

from corpusforge.core import files
from corpusforge.core.errors import UserError, resource_error
from corpusforge.core.files import make_private_dir


def test_writes_and_replaces_a_regular_file(tmp_path):
    target = tmp_path / "sub" / "out.json"
    files.write_json(str(target), {"b": 1, "a": [1]})
    assert target.read_text() == '{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n'
    files.write_bytes_atomic(str(target), b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink"])
def test_never_replaces_what_is_not_a_regular_file(tmp_path, kind):
    target = tmp_path / "target"
    if kind == "directory":
        target.mkdir()
        (target / "inside").write_text("kept")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        (tmp_path / "real").write_text("kept")
        target.symlink_to(tmp_path / "real")
    with pytest.raises(UserError, match="not a regular file"):
        files.write_bytes_atomic(str(target), b"x")
    assert os.path.lexists(target)
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []
    if kind == "directory":
        assert (target / "inside").read_text() == "kept"
    if kind == "symlink":
        assert (tmp_path / "real").read_text() == "kept"


def test_a_device_node_is_refused_not_replaced():
    with pytest.raises(UserError, match="device or special file"):
        files.write_bytes_atomic("/dev/null", b"x")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "manifest.json"
    target.write_text("old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        files.write_bytes_atomic(str(target), b"new")
    with pytest.raises(OSError):
        files.write_arrow_atomic(str(tmp_path / "part.arrow"), pa.record_batch({"a": [1]}))
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_resource_errors_name_the_path_and_what_to_do():
    full = OSError(errno.ENOSPC, "No space left on device", "/data/run/clean/part-0.arrow")
    message = str(resource_error(full))
    assert message.startswith("/data/run/clean/part-0.arrow: no space left on the device: free some space")
    assert "permission denied" in str(resource_error(PermissionError(errno.EACCES, "Permission denied", "/x")))
    assert "read-only filesystem" in str(resource_error(OSError(errno.EROFS, "Read-only file system", "/x")))
    # Beam re-raises a worker's error as text inside its own exception.
    wrapped = RuntimeError("... OSError: [Errno 28] No space left on device: '/r/.tmp-build-1/x' [while running 'W']")
    assert str(resource_error(wrapped)).startswith("/r/.tmp-build-1/x: no space left")
    chained = RuntimeError("outer")
    chained.__cause__ = full
    assert "no space left" in str(resource_error(chained))
    assert resource_error(ValueError("unrelated")) is None
    assert resource_error(FileNotFoundError(errno.ENOENT, "No such file", "/x")) is None


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
