"""GF002's precheck parses only the top-level statements that hold a stop-gradient
(`prechecks.top_level_cuts`, `prechecks.marked_tree`): each piece's tree must be the whole file's
tree of those statements, and the precheck's answer the one it gives on the whole file."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gradfix import prechecks
from gradfix.rules import gf002_detached_sum as gf002

ROOT = Path(__file__).resolve().parent.parent


def _statements(tree: ast.Module):
    return [ast.dump(s, include_attributes=True) for s in tree.body]


def _check(text: bytes) -> None:
    """The pieces are statements of the whole file's tree, node for node and line for line; the
    precheck answers as on the whole tree."""
    try:
        whole = ast.parse(text)
    except SyntaxError:
        whole = None
    cuts = prechecks.top_level_cuts(text)
    assert cuts[0] == 0 and cuts[-1] == len(text) and cuts == sorted(set(cuts))  # ([0] for an empty text)
    state: dict = {}
    marked = prechecks.marked_tree(text, text, state, gf002._MARKER)
    if whole is None:  # (the pieces may parse: an error outside them is not seen)
        assert marked is None or not marked[1]
        return
    assert marked is not None
    tree, is_whole = marked
    full = _statements(whole)
    pieces = _statements(tree)
    assert all(p in full for p in pieces)
    if is_whole:
        assert pieces == full
    # Every statement whose lines hold a marker is in the pieces.
    lines = text.splitlines()
    for statement, dumped in zip(whole.body, full):
        if gf002._MARKER.search(b"\n".join(lines[statement.lineno - 1 : statement.end_lineno])):
            assert dumped in pieces, ast.unparse(statement)[:80]
    assert gf002.might_match(text, text, {}) == bool(gf002._pair(whole, True, text, {}))


TRICKY = [
    # a multi-line decorator whose closing bracket is at column 0
    b"import torch\n\n@dec(\n    a=1,\n)\ndef f(x, y):\n    return g(x.detach(), y) + g(x, y.detach())\n",
    # decorators over each other, a comment and a blank line between
    b"@a\n# note\n\n@b.c(1)\nclass A:\n    def f(self, x, y):\n        return g(x.detach(), y) + g(x, y.detach())\n",
    # a `def` at column 0 inside a docstring, and after a string continued by a backslash
    b'"""\ndef fake(x):\n    x.detach()\n"""\nS = "a\\\ndef also_fake(): pass"\ndef f(x, y):\n    return g(x.detach(), y) + g(x, y.detach())\n',
    # `'''` strings, one holding `"""`, and a comment holding a quote
    b"T = '''\n\"\"\"\nclass B: x.detach()\n'''\n# it's\ndef f(x, y):\n    return g(x.detach(), y) + g(x, y.detach())\n",
    # a matrix product at column 0 inside brackets, right above a def (the pieces do not parse)
    b"y = (a\n@ b)\ndef f(x, y):\n    return g(x.detach(), y) + g(x, y.detach())\n",
    # a decorator's argument at column 0 that is no closing bracket
    b"@dec(\nx=1)\ndef f(x, y):\n    return g(x.detach(), y) + g(x, y.detach())\ndef h(x):\n    return x.detach()\n",
    # the pair at module level: the precheck needs the whole tree
    b"def h():\n    pass\nq = g(x.detach(), y)\ndef k():\n    pass\ne = g(x, y.detach())\nloss = q + e\n",
    # Windows line ends, an async def, a backslash continuation before a def-like line
    b"import torch\r\nasync def f(x, y):\r\n    return g(x.detach(), y) + g(x, y.detach())\r\nz = 1 + \\\r\n 2\r\ndef k(x):\r\n    return x.detach()\r\n",
    # no pair: calls of different functions
    b"def f(x, y):\n    return g(x.detach(), y) + h(x, y.detach())\nclass C:\n    pass\n",
    # a syntax error in a piece without a marker, and in one with
    b"def f(x, y):\n    return g(x.detach(), y) + g(x, y.detach())\ndef broken(:\n    pass\n",
    b"def f(x, y):\n    return g(x.detach(), y) + g(x, y.detach()\ndef k():\n    pass\n",
    # an unterminated triple-quoted string swallows the rest
    b'def f(x, y):\n    return g(x.detach(), y) + g(x, y.detach())\nS = """\ndef k():\n    x.detach()\n',
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_layouts(text):
    _check(text)


def test_a_syntax_error_outside_the_pieces_is_not_parsed():
    text = TRICKY[9]
    state: dict = {}
    assert prechecks.marked_tree(text, text, state, gf002._MARKER) is not None
    assert "tree" not in state  # (the whole file was not parsed: its error goes unreported)


def _corpus():
    found = sorted((ROOT / "fixtures").glob("GF002/*/*.py")) + sorted((ROOT / "tests" / "gf002_terms").glob("*.py"))
    found += sorted((ROOT / "gradfix").rglob("*.py"))  # big files: many pieces, few markers
    return found


def test_the_project_files():
    files = _corpus()
    assert len(files) > 60
    for path in files:
        _check(path.read_bytes())
