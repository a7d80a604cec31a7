"""Packaging: the license, the metadata, and an sdist that carries what its tests need.

The sdist is built with setuptools' own PEP 517 backend (what `pip install .`
and `python -m build` call) from a copy of the files git tracks, so the
working tree is not touched; every tracked file of the package, the tests,
fixtures, examples, docs and benchmarks must be in it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from gradfix.output.machine import REPOSITORY_URL

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# What the tests and the README's commands read, besides the package itself.
SHIPPED_DIRS = ("gradfix/", "tests/", "fixtures/", "examples/", "docs/", "benchmarks/")
SHIPPED_FILES = ("LICENSE", "README.md", "pyproject.toml", "MANIFEST.in", ".pre-commit-hooks.yaml", ".ci/run")


def test_license_is_mit_in_the_file_and_the_metadata():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"  # an SPDX expression (PEP 639)
    assert project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639: the expression only
    # SPDX expressions need setuptools 77; the build requirement says so
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]


def test_project_urls_and_classifiers():
    project = PYPROJECT["project"]
    assert project["urls"]["Repository"] == REPOSITORY_URL  # SARIF's helpUri points there
    assert project["urls"]["Documentation"].startswith(REPOSITORY_URL)
    assert "Programming Language :: Python :: 3" in project["classifiers"]


def _tracked() -> list:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    try:
        import setuptools
    except ImportError:  # pragma: no cover
        pytest.skip("setuptools is not installed")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} predates SPDX license expressions")
    source = tmp_path_factory.mktemp("source")
    tracked = _tracked()
    for name in set(tracked) | {"LICENSE", "MANIFEST.in", "pyproject.toml"}:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    # Files that must never ship, as a working tree has them.
    (source / "tests" / "__pycache__").mkdir(exist_ok=True)
    (source / "tests" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    (source / "gradfix" / ".files.py.gradfix-tmp-1-abc").write_bytes(b"junk")
    dist = tmp_path_factory.mktemp("dist")
    script = "import sys, setuptools.build_meta as b; print(b.build_sdist(sys.argv[1]))"
    proc = subprocess.run([sys.executable, "-c", script, str(dist)], cwd=source, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    archive = dist / proc.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        prefix = names[0].split("/")[0] + "/"
        pkg_info = tar.extractfile(prefix + "PKG-INFO").read().decode()
    return {name[len(prefix):] for name in names if name.startswith(prefix)}, pkg_info, tracked


def test_sdist_contains_every_tracked_file_the_tests_need(sdist):
    members, _, tracked = sdist
    needed = {name for name in tracked if name.startswith(SHIPPED_DIRS)} | set(SHIPPED_FILES)
    missing = sorted(needed - members)
    assert not missing, missing
    assert "tests/conftest.py" in members and "examples/adversarial_alignment.py" in members
    assert any(name.startswith("fixtures/GF001/positive/") and name.endswith(".fixed.py") for name in members)


def test_sdist_has_no_caches_or_temporaries(sdist):
    members, _, _ = sdist
    junk = [name for name in members if "__pycache__" in name or name.endswith(".pyc") or "gradfix-tmp" in name
            or name.startswith((".gradfix_cache", ".hypothesis", ".venv", ".pytest_cache"))]
    assert not junk, junk


def test_sdist_metadata(sdist):
    _, pkg_info, _ = sdist
    assert "License-Expression: MIT" in pkg_info.splitlines()
    assert "License-File: LICENSE" in pkg_info.splitlines()
    assert f"Project-URL: Repository, {REPOSITORY_URL}" in pkg_info.splitlines()
    assert "Classifier: Topic :: Software Development :: Quality Assurance" in pkg_info.splitlines()
