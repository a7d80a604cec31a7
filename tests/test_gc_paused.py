"""`engine.lint_bytes` pauses the cyclic garbage collector for the file and restores it as it was
(`engine._gc_paused`): a library caller's collector state never changes, an error included."""

import gc

import pytest

import gradfix.engine as engine
from gradfix.options import LintOptions

SOURCE = b"l1 = f(x.detach(), y)\nl1.backward(retain_graph=True)\nl2 = f(x, y.detach())\nl2.backward()\n"


@pytest.fixture
def collector():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_off_while_a_file_is_linted_and_on_after(monkeypatch, collector):
    seen = []
    real = engine.prefilter

    def spy(data, rules, **kwargs):
        seen.append(gc.isenabled())
        return real(data, rules, **kwargs)

    monkeypatch.setattr(engine, "prefilter", spy)
    gc.enable()
    result = engine.lint_bytes(SOURCE, "t.py", LintOptions(("GF001",)))
    assert [f.code for f in result.findings] == ["GF001"]
    assert seen == [False]
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(collector):
    gc.disable()
    engine.lint_bytes(SOURCE, "t.py", LintOptions(("GF001",)))
    assert not gc.isenabled()


def test_the_collector_comes_back_after_an_error(monkeypatch, collector):
    def boom(data, rules, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "prefilter", boom)
    gc.enable()
    with pytest.raises(RuntimeError):
        engine.lint_bytes(SOURCE, "t.py", LintOptions(("GF001",)))
    assert gc.isenabled()
