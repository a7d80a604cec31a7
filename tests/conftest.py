"""Shared pytest setup.

Makes this checkout importable when pytest runs without an installed
gradfix, and skips tests marked ``cuda`` where no CUDA device exists.  torch
is imported only when such tests were collected, so the torch-free test
modules stay torch-free.
"""

import pathlib
import sys

import pytest

ROOT = str(pathlib.Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_collection_modifyitems(config, items):
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if not cuda_items:
        return
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if not available:
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in cuda_items:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_gradfix_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own result cache: a hit from another test must not hide a parse."""
    monkeypatch.setenv("GRADFIX_CACHE_DIR", str(tmp_path_factory.mktemp("gradfix-cache")))
    # The cache's per-user HMAC key lives under XDG_CACHE_HOME: keep the tests out of the real home.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(scope="session")
def precommit_hooks(tmp_path_factory):
    """`(repo, rev, home)`: a committed copy of this checkout for pre-commit to install hooks from,
    and a `PRE_COMMIT_HOME` shared by every test of the run, pytest-xdist's workers included.

    pre-commit builds one environment per hook repository and revision (some 15 seconds, a pip
    install of gradfix); each test building its own was a minute of CI. The copy is made once,
    under the run's shared temporary root, and moved into place in one rename, so a worker that
    loses the race takes the winner's; pre-commit locks its own store while it installs.
    """
    import os
    import shutil
    import subprocess
    import tempfile

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # (shared by the workers: each one's basetemp lies under it)
    repo = root / "precommit-hooks"
    if not (repo / ".git").is_dir():
        staging = pathlib.Path(tempfile.mkdtemp(dir=root, prefix="precommit-staging-"))
        copy = staging / "hooks"
        ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", "fixtures", "tests")
        shutil.copytree(ROOT, copy, ignore=ignore)
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hooks"]):
            subprocess.run(["git", *args], cwd=copy, capture_output=True, check=True)
        try:
            copy.rename(repo)
        except OSError:
            pass  # another worker's copy is in place: the same files
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    return repo, rev, root / "precommit-home"
