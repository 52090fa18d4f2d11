"""A test-only Beam filesystem, ``cftest://``, backed by a local directory.

Code that reads through ``apache_beam.io.filesystems.FileSystems`` works the same on gs://, s3:// or
hdfs://; code that quietly assumes a local path (``open``, ``pathlib``, a C library given a file name)
fails on ``cftest://`` as it would on a remote worker. Beam finds a filesystem by its ``scheme()`` among
the subclasses of ``FileSystem``, so importing this module registers it in this process only (use it with
the in-process DirectRunner).

    root = use_cftest(tmp_path)        # cftest://x/y is root/x/y
"""
from __future__ import annotations

import os
import pathlib

from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.localfilesystem import LocalFileSystem

SCHEME = "cftest"
PREFIX = f"{SCHEME}://"


class CfTestFileSystem(LocalFileSystem):
    root: str = ""  # set by use_cftest()

    @classmethod
    def scheme(cls):
        return SCHEME

    def _local(self, path: str) -> str:
        assert self.root, "call tests.beamfs.use_cftest(directory) first"
        assert path.startswith(PREFIX), path
        return os.path.join(self.root, path[len(PREFIX):])

    def _url(self, local: str) -> str:
        return PREFIX + os.path.relpath(local, self.root)

    def join(self, basepath, *paths):
        return "/".join([basepath.rstrip("/"), *(p.strip("/") for p in paths)])

    def split(self, path):
        head, _, tail = path.rstrip("/").rpartition("/")
        return head, tail

    def mkdirs(self, path):
        super().mkdirs(self._local(path))

    def _list(self, dir_or_prefix):
        local = self._local(dir_or_prefix)
        for dirpath, _, files in os.walk(local):
            for name in files:
                path = os.path.join(dirpath, name)
                yield FileMetadata(self._url(path), os.path.getsize(path), os.path.getmtime(path))

    def create(self, path, *args, **kwargs):
        os.makedirs(os.path.dirname(self._local(path)), exist_ok=True)
        return super().create(self._local(path), *args, **kwargs)

    def open(self, path, *args, **kwargs):
        return super().open(self._local(path), *args, **kwargs)

    def copy(self, sources, destinations):
        super().copy([self._local(p) for p in sources], [self._local(p) for p in destinations])

    def rename(self, sources, destinations):
        super().rename([self._local(p) for p in sources], [self._local(p) for p in destinations])

    def exists(self, path):
        return super().exists(self._local(path))

    def size(self, path):
        return super().size(self._local(path))

    def last_updated(self, path):
        return super().last_updated(self._local(path))

    def checksum(self, path):
        return super().checksum(self._local(path))

    def metadata(self, path):
        # not super().metadata(local): it calls self.size(local), which would map the local path again
        local = self._local(path)
        return FileMetadata(path, os.path.getsize(local), os.path.getmtime(local))

    def delete(self, paths):
        super().delete([self._local(p) for p in paths])


def use_cftest(root: str | os.PathLike) -> pathlib.Path:
    """Back ``cftest://`` by ``root`` (created if needed); returns it."""
    root = pathlib.Path(root)
    root.mkdir(parents=True, exist_ok=True)
    CfTestFileSystem.root = str(root)
    return root
