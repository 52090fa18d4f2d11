"""Reproducible installs: every dependency has an upper bound, and constraints.txt pins versions inside them."""
import pathlib
import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return [Requirement(r) for r in project["dependencies"] + extras["test"] + extras["query"]]


def _pins():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_dependency_has_an_upper_bound():
    unbounded = [str(r) for r in _requirements() if not any(s.operator in ("<", "<=", "~=", "==") for s in r.specifier)]
    assert unbounded == []


def test_constraints_pin_every_dependency_inside_its_range_but_not_torch_or_corpusforge():
    pins = _pins()
    assert "torch" not in pins and "corpusforge" not in pins  # torch comes first, CPU or CUDA build
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        if name == "torch":
            continue
        assert name in pins, f"constraints.txt does not pin {name}"
        assert pins[name] in requirement.specifier, f"{name}=={pins[name]} is outside {requirement.specifier}"


def test_make_installs_with_the_constraints():
    makefile = (ROOT / "Makefile").read_text()
    installs = [line.strip() for line in makefile.splitlines() if re.match(r"\s+\$\(PIP\) install ", line)]
    assert installs[0] == "$(PIP) install $(TORCH)"
    assert all("$(CONSTRAINTS)" in line for line in installs[1:]) and len(installs) == 3
    assert "CONSTRAINTS := -c constraints.txt" in makefile


def test_the_wheel_ships_the_report_templates(tmp_path):
    """The report renders from files in pipeline/report/templates/: an installed wheel must carry them
    (setup.py's package_data). Built from a copy of the sources, so the checkout gets no build/ folder."""
    import shutil
    import subprocess
    import sys
    import zipfile

    source = tmp_path / "src"
    for name in ("pipeline", "tokenizer", "trainers", "corpusforge"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "wheel")], check=True, capture_output=True, timeout=300)
    wheel, = (tmp_path / "wheel").glob("corpusforge-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.name for p in (ROOT / "pipeline" / "report" / "templates").iterdir())
    assert templates and all(f"corpusforge/pipeline/report/templates/{name}" in names for name in templates)
