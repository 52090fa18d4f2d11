"""The layers of docs/architecture.md, checked from the imports of every module (function-level ones too, and
``importlib`` imports named by a string); no module uses another's private names; no stage imports another.

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


def _parse(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"))


def _base(name: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The module a ``from ... import`` reads from, relative imports resolved against ``name``."""
    base = node.module or ""
    if node.level:
        anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def _dynamic_imports(tree: ast.Module) -> set[str]:
    """Modules named by string in ``importlib.import_module(...)`` / ``__import__(...)``: a literal argument, or a
    subscript of a module-level dict whose values are literal module names (the lazy ``_EXPORTS`` pattern)."""
    tables = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            values = {v.value for v in node.value.values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Name):
                    tables[target.id] = values
    found = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if func not in ("import_module", "__import__"):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.add(arg.value)
        elif isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name):
            found |= tables.get(arg.value.id, set())
    return found


def imports_of(name: str, tree: ast.Module, is_package: bool = False) -> set[str]:
    """Every corpusforge module ``name`` imports (``from a import b`` counts ``a.b`` when that is a module), by
    an import statement anywhere in it or by ``importlib`` with a string."""
    found = _dynamic_imports(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(name, node, is_package)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            found.update(submodules)
            if len(submodules) < len(node.names):  # some names are attributes of ``base`` itself
                found.add(base)
    return {m for m in found if m.startswith("corpusforge.") and m in MODULES}


def _private(attribute: str) -> bool:
    return attribute.startswith("_") and not attribute.startswith("__")


def private_uses(name: str, tree: ast.Module, is_package: bool = False) -> list[str]:
    """``module._name`` for every private name ``name`` takes from another corpusforge module: imported by name,
    or read as an attribute of a module it imported."""
    found, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _base(name, node, is_package)
            if not base.startswith("corpusforge") or base == name:
                continue
            found += [f"{base}.{alias.name}" for alias in node.names if _private(alias.name)]
            modules.update({alias.asname or alias.name: f"{base}.{alias.name}" for alias in node.names
                            if f"{base}.{alias.name}" in MODULES})
        elif isinstance(node, ast.Import):
            modules.update({alias.asname: alias.name for alias in node.names if alias.asname})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
            module = modules.get(node.value.id)
            if module is not None and module != name:
                found.append(f"{module}.{node.attr}")
    return sorted(set(found))


GRAPH = {name: imports_of(name, _parse(name), path.name == "__init__.py") for name, path in MODULES.items()}

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


def upward(module: str, imported: set[str]) -> list[str]:
    layer = _layer(module)
    return sorted(m for m in imported if _layer(m) != layer and _layer(m) not in ALLOWED[layer]
                  and m not in ("corpusforge.pipeline", "corpusforge"))  # roots hold only __version__


# The stage packages: pipeline/<section>/ beside pipeline/<section>/stage.py. None imports another: what stages
# share lives below them (pipeline/ modules, corpusforge.core).
STAGE_PACKAGES = {f"corpusforge.pipeline.{p.parent.name}" for p in (ROOT / "pipeline").glob("*/stage.py")}


def _stage_package(module: str) -> str | None:
    return next((p for p in STAGE_PACKAGES if module == p or module.startswith(p + ".")), None)


def other_stages(module: str, imported: set[str]) -> list[str]:
    own = _stage_package(module)
    return sorted(m for m in imported if own is not None and _stage_package(m) not in (None, own))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    wrong = upward(module, GRAPH[module])
    assert not wrong, f"{module} ({_layer(module)}) imports {wrong}, above its layer"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_of_another_module(module):
    used = private_uses(module, _parse(module), MODULES[module].name == "__init__.py")
    assert not used, f"{module} uses {used}, private to another module: make it public where it is defined"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_stage_imports_another_stage(module):
    wrong = other_stages(module, GRAPH[module])
    assert not wrong, f"{module} imports {wrong}, of another stage: move what they share below the stages"


# Each check, shown failing on a module that breaks it.

def test_the_checks_see_a_private_name_imported_or_read_off_a_module():
    assert private_uses("corpusforge.pipeline.rethreshold", ast.parse(
        "from corpusforge.pipeline.build import _swap_marker, run_build")) == ["corpusforge.pipeline.build._swap_marker"]
    assert private_uses("corpusforge.ablate.reuse", ast.parse(
        "from corpusforge.pipeline import build\nbuild._gather(1)")) == ["corpusforge.pipeline.build._gather"]
    assert private_uses("corpusforge.ablate.reuse", ast.parse(
        "import corpusforge.pipeline.build as b\nb._run_secret")) == ["corpusforge.pipeline.build._run_secret"]
    assert private_uses("corpusforge.ablate.reuse", ast.parse(
        "from corpusforge.pipeline.build import run_build, __version__\nrun_build.__doc__")) == []


def test_the_checks_see_a_stage_importing_another_stage():
    tree = ast.parse("from corpusforge.pipeline.pii.scrubber import Scrubber\nfrom corpusforge.pipeline import stats")
    assert other_stages("corpusforge.pipeline.quality.stage", imports_of("corpusforge.pipeline.quality.stage", tree)) \
        == ["corpusforge.pipeline.pii.scrubber"]
    assert other_stages("corpusforge.pipeline.pii.stage", imports_of("corpusforge.pipeline.pii.stage", tree)) == []


def test_the_checks_see_an_upward_import_made_with_importlib():
    for source in ('import importlib\nimportlib.import_module("corpusforge.cli.main")',
                   '__import__("corpusforge.cli.main")',
                   'from importlib import import_module\nTABLE = {"x": "corpusforge.cli.main"}\n'
                   'def f(n):\n    return import_module(TABLE[n])'):
        imported = imports_of("corpusforge.core.files", ast.parse(source))
        assert upward("corpusforge.core.files", imported) == ["corpusforge.cli.main"], source


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


# What the build and the report need from a stage is asked of the stage (``Stage`` hooks): neither imports a stage
# package, and the build reads no stage's config section and names no stage by itself.
REPORT = sorted(m for m in MODULES if m.startswith("corpusforge.pipeline.report"))
SECTIONS = {package.rsplit(".", 1)[1] for package in STAGE_PACKAGES}


def stage_knowledge(name: str, tree: ast.Module) -> list[str]:
    found = [f"imports {m}" for m in sorted(imports_of(name, tree)) if _stage_package(m)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SECTIONS and isinstance(node.value, ast.Name):
            found.append(f"reads {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Constant) and node.value in SECTIONS:
            found.append(f"names {node.value!r}")
    return found


def test_the_build_names_no_stage():
    assert not stage_knowledge("corpusforge.pipeline.build", _parse("corpusforge.pipeline.build"))


@pytest.mark.parametrize("module", REPORT)
def test_the_report_imports_no_stage(module):
    assert not [m for m in GRAPH[module] if _stage_package(m)]


def test_the_checks_see_a_generic_module_naming_a_stage():
    tree = ast.parse('from corpusforge.pipeline.pii.removed import ScrubRemoved\n'
                     'if config.pii.enabled or stage == "dedup":\n    pass')
    assert stage_knowledge("corpusforge.pipeline.build", tree) == [
        "imports corpusforge.pipeline.pii.removed", "reads config.pii", "names 'dedup'"]


# docs/architecture.md is where a newcomer finds where a change goes: every module it names exists, and every
# package is in it by its path.
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"
SEARCHED = [ROOT / folder for folder in (*FOLDERS, "tests", "bench")]


def missing_modules(doc: str) -> list[str]:
    """Module files the text names that do not exist: a path (``pipeline/build.py``) at that path under the
    repository, a bare name (``registry.py``, in the tree's columns) somewhere in a package, tests or bench."""
    import re

    missing = []
    for path in dict.fromkeys(re.findall(r"(?<![\w./<>-])((?:[\w-]+/)*[\w-]+\.py)\b", doc)):
        if "/" in path:
            found = (ROOT / path).is_file()
        else:
            found = (ROOT / path).is_file() or any(any(folder.rglob(path)) for folder in SEARCHED)
        if not found:
            missing.append(path)
    return missing


def unlisted_packages(doc: str) -> list[str]:
    packages = sorted(str(p.parent.relative_to(ROOT)) + "/" for folder in FOLDERS
                      for p in (ROOT / folder).rglob("__init__.py"))
    return [p for p in packages if p not in doc]


def test_the_architecture_page_names_only_modules_that_exist():
    assert not missing_modules(ARCHITECTURE_DOC.read_text(encoding="utf-8"))


def test_the_architecture_page_lists_every_package():
    assert not unlisted_packages(ARCHITECTURE_DOC.read_text(encoding="utf-8"))


def test_the_page_checks_see_a_stale_module_and_a_missing_package():
    assert missing_modules("`pipeline/build.py` and `pipeline/gone.py`; registry.py, nowhere.py") == [
        "pipeline/gone.py", "nowhere.py"]
    assert "pipeline/quality/" in unlisted_packages("only `pipeline/` and `trainers/`")


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
