"""Deletion goes by the marker, never by a name: every delete, rename or replace in the package goes through
``corpusforge.core.rundir`` (``delete``, ``move``, ``swap_in``, ``publish_dir``, ``remove_temporary``), which
checks that a marker records the path as corpusforge's. A raw call anywhere else fails this test; the few that
touch only a file their own function just created exclusively carry a ``# raw-...-ok: why`` comment."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("corpusforge", "pipeline", "tokenizer", "trainers")
ALLOWED_MODULE = ROOT / "corpusforge" / "core" / "rundir.py"

# module.function calls that delete, rename or replace
RAW = {("shutil", "rmtree"), ("shutil", "move"), ("os", "remove"), ("os", "unlink"), ("os", "rmdir"),
       ("os", "removedirs"), ("os", "replace"), ("os", "rename"), ("os", "renames"), ("FileSystems", "delete"),
       ("FileSystems", "rename")}
# methods of pathlib.Path (and file systems) that delete or rename, whatever the receiver is called
METHODS = {"unlink", "rmdir", "rename", "rmtree"}


def _bare_names(tree: ast.AST) -> dict[str, tuple[str, str]]:
    """Names bound by ``from os import remove as rm`` (and from shutil, FileSystems' module) to a raw call."""
    modules = {"os": "os", "shutil": "shutil", "apache_beam.io.filesystems": "FileSystems"}
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in modules:
            for alias in node.names:
                if (modules[node.module], alias.name) in RAW:
                    bound[alias.asname or alias.name] = (modules[node.module], alias.name)
    return bound


def raw_deletions(source: str) -> list[tuple[int, str]]:
    found = []
    lines = source.splitlines()
    tree = ast.parse(source)
    bare = _bare_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in bare:
            line = lines[node.lineno - 1]
            if "-ok:" not in line:
                found.append((node.lineno, line.strip()))
            continue
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        attr, receiver = node.func.attr, node.func.value
        name = receiver.id if isinstance(receiver, ast.Name) else receiver.attr if isinstance(receiver, ast.Attribute) else ""
        hit = ((name, attr) in RAW or attr in METHODS and name not in ("os", "shutil")
               # Path.replace(target): one positional argument (str.replace takes two; dataclasses.replace keywords)
               or attr == "replace" and name != "dataclasses" and len(node.args) == 1 and not node.keywords)
        line = lines[node.lineno - 1]
        if hit and "-ok:" not in line:
            found.append((node.lineno, line.strip()))
    return found


def test_no_raw_deletion_outside_rundir():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ALLOWED_MODULE:
                continue
            for lineno, line in raw_deletions(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {line}")
    assert not offenders, ("raw deletions/renames outside corpusforge/core/rundir.py (use rundir.delete / move / "
                           "swap_in / publish_dir / remove_temporary):\n" + "\n".join(offenders))


def test_the_rule_sees_each_kind_of_raw_call():
    source = ("import os, shutil, pathlib\nshutil.rmtree(p)\nos.remove(p)\npathlib.Path(p).unlink()\n"
              "os.replace(a, b)\nFileSystems.delete([p])\nq.rename(t)\nq.replace(t)\n'a'.replace('b', 'c')\n"
              "dataclasses.replace(x, y=1)\nos.unlink(p)  # raw-delete-ok: its own temporary file\n")
    assert [n for n, _ in raw_deletions(source)] == [2, 3, 4, 5, 6, 7, 8]


def test_the_rule_sees_a_raw_call_imported_by_its_bare_name():
    source = ("from shutil import rmtree\nfrom os import remove as rm, getcwd\nrmtree(p)\nrm(p)\ngetcwd()\n"
              "def rmtree2(p): pass\nrmtree2(p)\n")
    assert [n for n, _ in raw_deletions(source)] == [3, 4]
