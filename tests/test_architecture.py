"""The layers of docs/architecture.md, checked from the imports of every module (function-level ones too).

    corpusforge (the package root: the lazy public API and ``python -m corpusforge``)
    corpusforge.cli         top: one module per command; imports everything below
    corpusforge.ablate      builds, tokenizes, trains and evaluates corpus variants
    corpusforge.config      the run's whole Config (the sections of pipeline, tokenizer, trainers)
    corpusforge.trainers  ->  corpusforge.tokenizer  ->  corpusforge.core      (arrows point down only)
    corpusforge.pipeline (readers, stages, build, report)  ->  corpusforge.core
    corpusforge.core        bottom: imports nothing else of corpusforge
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = {"corpusforge": "corpusforge", "pipeline": "corpusforge.pipeline", "tokenizer": "corpusforge.tokenizer",
           "trainers": "corpusforge.trainers"}


def _modules() -> dict[str, pathlib.Path]:
    modules = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


MODULES = _modules()


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """Every corpusforge module ``name`` imports (``from a import b`` counts ``a.b`` when that is a module)."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            found.update(submodules)
            if len(submodules) < len(node.names):  # some names are attributes of ``base`` itself
                found.add(base)
    return {m for m in found if m.startswith("corpusforge.") and m in MODULES}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}

# Bottom to top; a module belongs to the first layer whose name prefixes it.
LAYERS = ("corpusforge.core", "corpusforge.pipeline", "corpusforge.tokenizer", "corpusforge.trainers",
          "corpusforge.config", "corpusforge.ablate", "corpusforge.cli")


def _layer(module: str) -> str:
    for prefix in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    return "corpusforge"  # the package root (__init__, __main__): the public API over every layer


# What each layer may import, besides itself.
ALLOWED = {
    "corpusforge.core": set(),
    "corpusforge.pipeline": {"corpusforge.core"},
    "corpusforge.tokenizer": {"corpusforge.core"},
    "corpusforge.trainers": {"corpusforge.core", "corpusforge.tokenizer"},
    "corpusforge.config": {"corpusforge.core", "corpusforge.pipeline", "corpusforge.tokenizer",
                           "corpusforge.trainers"},
    "corpusforge.ablate": {"corpusforge.core", "corpusforge.pipeline", "corpusforge.tokenizer",
                           "corpusforge.trainers", "corpusforge.config"},
    "corpusforge.cli": {"corpusforge.core", "corpusforge.pipeline", "corpusforge.tokenizer",
                        "corpusforge.trainers", "corpusforge.config", "corpusforge.ablate"},
    "corpusforge": set(LAYERS),
}


def test_the_scan_sees_the_whole_tree():
    assert len(MODULES) > 80 and sum(len(v) for v in GRAPH.values()) > 150
    assert "corpusforge.core.errors" in GRAPH["corpusforge.trainers.train"]
    assert {_layer(m) for m in MODULES} == {*LAYERS, "corpusforge"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    layer = _layer(module)
    upward = sorted(m for m in GRAPH[module]
                    if _layer(m) != layer and _layer(m) not in ALLOWED[layer]
                    and m not in ("corpusforge.pipeline", "corpusforge"))  # roots hold only __version__
    assert not upward, f"{module} ({layer}) imports {upward}, above its layer"


def test_no_import_cycles():
    """Tarjan's strongly connected components over module imports: every component is a single module."""
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_every_stage_follows_the_layout():
    """Each registered stage lives in pipeline/<section>/stage.py beside its config.py."""
    from corpusforge.pipeline.stage import registered_stages

    stages = registered_stages()
    assert [s.section for s in stages] == ["normalize", "quality", "dedup", "pii"]
    for stage in stages:
        assert stage.__module__ == f"corpusforge.pipeline.{stage.section}.stage"
        assert f"corpusforge.pipeline.{stage.section}.config" in MODULES
        assert stage.__name__.lower() == stage.section


def test_one_installed_name():
    import corpusforge

    assert corpusforge.load_config is not None and corpusforge.Dedup.section == "dedup"
    assert pathlib.Path(corpusforge.pipeline.__file__).parent == ROOT / "pipeline"


def _config_sections() -> list[type]:
    import dataclasses
    import typing

    from corpusforge.config import Config

    found, todo = [], [Config]
    while todo:
        section = todo.pop()
        found.append(section)
        hints = typing.get_type_hints(section)
        todo.extend(hints[f.name] for f in dataclasses.fields(section) if dataclasses.is_dataclass(hints[f.name]))
    return found


def test_one_way_to_declare_a_config_field():
    """Every section is a ``*Config`` dataclass, and every field with a default is declared through
    ``corpusforge.core.config_loader.setting`` (a leaf field always with its help line)."""
    import dataclasses
    import typing

    sections = _config_sections()
    assert len(sections) > 25
    for section in sections:
        assert section.__name__.endswith("Config"), f"{section.__name__}: config sections are named *Config"
        hints = typing.get_type_hints(section)
        for f in dataclasses.fields(section):
            where = f"{section.__module__}.{section.__name__}.{f.name}"
            assert "help" in f.metadata, f"{where}: declare it with setting(default, help)"
            if not dataclasses.is_dataclass(hints[f.name]):
                assert f.metadata["help"].strip(), f"{where}: its help line is empty"
    # No module keeps a private alias for dataclasses.field (F = field, def _f(...)): setting is the one helper.
    for module, path in MODULES.items():
        if path.name == "config.py":
            source = path.read_text(encoding="utf-8")
            assert "dataclasses.field" not in source and "import field" not in source, \
                f"{module}: declare config fields with setting(), not dataclasses.field"
