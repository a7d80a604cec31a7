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
