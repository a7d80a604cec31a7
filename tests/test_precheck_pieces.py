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
    # A class cut at its definitions: its marked ones, parsed under `PIECE_CLASS`, are statements
    # of a class body of the whole tree.
    split = [s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == prechecks.PIECE_CLASS]
    members = [ast.dump(m, include_attributes=True) for s in whole.body if isinstance(s, ast.ClassDef) for m in s.body]
    from_classes = [ast.dump(m, include_attributes=True) for s in split for m in s.body]
    pieces = _statements(ast.Module(body=[s for s in tree.body if s not in split], type_ignores=[]))
    assert all(p in full for p in pieces)
    assert all(m in members for m in from_classes)
    if is_whole:
        assert pieces == full and not split
    # Every statement whose lines hold a marker is in the pieces (a split class: its marked members).
    lines = text.splitlines()

    def marked(statement) -> bool:
        return gf002._MARKER.search(b"\n".join(lines[statement.lineno - 1 : statement.end_lineno])) is not None

    for statement, dumped in zip(whole.body, full):
        if marked(statement) and dumped not in pieces:
            assert isinstance(statement, ast.ClassDef) and split, ast.unparse(statement)[:80]
            for member in statement.body:
                if marked(member):
                    assert ast.dump(member, include_attributes=True) in from_classes, ast.unparse(member)[:80]
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
    # Classes cut at their definitions (`_class_pieces`): the pair in one method, markers in others
    b"import torch\nclass M(nn.Module):\n    '''doc\n    def fake(self): pass\n    '''\n    def a(self, x):\n        return x.detach()\n\n    @property\n    def b(self):\n        return 1\n    async def c(self, x, y):\n        return g(x.detach(), y) + g(x, y.detach())\n",
    # the pair's sum after a nested def (the method is one piece), a nested class at the body's indent
    b"class M:\n    def f(self, x, y):\n        p = g(x.detach(), y)\n        q = g(x, y.detach())\n        def inner():\n            pass\n        return p + q\n    class Inner:\n        def h(self, x):\n            return x.detach()\n",
    # methods inside an `if` of the class body (deeper than the body), a multi-line decorator
    b"class M:\n    if FLAG:\n        def f(self, x, y):\n            return g(x.detach(), y) + g(x, y.detach())\n    @dec(\n        a=1,\n    )\n    def h(self, x):\n        return x.detach()\n",
    # a decorator's argument at the body's indent, a matrix product at the body's indent in brackets
    b"class M:\n    @dec(\n    a=1)\n    def f(self, x, y):\n        return g(x.detach(), y) + g(x, y.detach())\n    def h(self, x):\n        y = (x\n    @ w)\n        return y.detach()\n",
    # a marker among the class's attributes (the header's piece: the class whole), a multi-line header
    b"class M(\n    Base,\n):\n    W = w.detach()\n    def f(self, x, y):\n        return g(x.detach(), y) + g(x, y.detach())\n",
    # a body on the header's line, a class after it; tabs; lone CR line ends
    b"class A: w = g(x.detach(), y) + g(x, y.detach())\nclass B:\n\tdef f(self, x, y):\n\t\treturn g(x.detach(), y) + g(x, y.detach())\n\tdef h(self, x):\n\t\treturn x.detach()\n",
    b"class M:\r    def f(self, x, y):\r        return g(x.detach(), y) + g(x, y.detach())\r    def h(self):\r        pass\r    def k(self, x):\r        return x.detach()\r",
    # the module's statements after a class, in the class's run: a pair there (the whole tree decides)
    b"class M:\n    def f(self):\n        pass\n    def h(self, x):\n        return x.detach()\nq = g(x.detach(), y)\ne = g(x, y.detach())\nloss = q + e\n",
    # no pair: the two calls in two methods (two scopes)
    b"class M:\n    def f(self, x, y):\n        return g(x.detach(), y)\n    def h(self, x, y):\n        return g(x, y.detach())\n",
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


def test_a_class_is_parsed_at_its_marked_definitions_only():
    text = TRICKY[12]  # one method of four holds the pair, one more a marker
    state: dict = {}
    tree, whole = prechecks.marked_tree(text, text, state, gf002._MARKER)
    assert not whole and "tree" not in state
    (piece,) = tree.body
    assert piece.name == prechecks.PIECE_CLASS
    assert [(m.name, m.lineno) for m in piece.body] == [("a", 6), ("c", 12)]
    assert gf002.might_match(text, text, {})
    # Lone CR line ends (no cut: the cuts are made at `\n` line starts): the file's lines.
    text = TRICKY[18]
    tree, _ = prechecks.marked_tree(text, text, {}, gf002._MARKER)
    assert [(m.name, m.lineno) for s in tree.body for m in s.body] == [("f", 2), ("h", 4), ("k", 6)]
    # A CR line end before a cut: the piece's lines still count it.
    text = b"x = 1\ry = 2\nclass M:\n    def f(self):\n        pass\n    def k(self, x):\n        return g(x.detach(), y) + g(x, y.detach())\n"
    tree, _ = prechecks.marked_tree(text, text, {}, gf002._MARKER)
    assert [(m.name, m.lineno) for s in tree.body for m in s.body] == [("k", 6)]


# GF002 looks for two markers in one function: a run that is one definition holding a single marker
# is left unparsed (`prechecks._lone_definition`). Each text below puts one marker where a proof from
# the lines alone must fail, beside another marker the pair could use; `_check` compares the precheck
# with the whole tree's answer.
LONE = [
    # the marker in a module statement after the def, in the def's run (the pair at module level)
    b"def h():\n    pass\nq = g(x.detach(), y)\ndef k():\n    pass\ne = g(x, y.detach())\nloss = q + e\n",
    # ... after a form feed, which resets the indentation: `\fq` and `    \fq` stand at column 0
    b"def h():\n    pass\n\fq = g(x.detach(), y)\ndef k():\n    pass\ne = g(x, y.detach())\nloss = q + e\n",
    b"def h():\n    pass\n    \fq = g(x.detach(), y)\ndef k():\n    pass\ne = g(x, y.detach())\nloss = q + e\n",
    # ... after a string continued at column 0, after a backslash continuation at column 0
    b'def h():\n    s = """\nx\n"""\nq = g(x.detach(), y)\ndef k():\n    pass\ne = g(x, y.detach())\nloss = q + e\n',
    b"def h():\n    s = 1 + \\\n2\nq = g(x.detach(), y)\ndef k():\n    pass\ne = g(x, y.detach())\nloss = q + e\n",
    # a class's own statement after a method, in the method's run (class-level: the module's scope)
    b"class M:\n    def f(self):\n        pass\n    q = g(x.detach(), y)\n    def k(self):\n        pass\n    e = g(x, y.detach())\n    loss = q + e\n",
    # a header continued at column 0, a comment line at column 0 inside the body, a decorator's marker
    b"def f(x,\ny=g(x.detach(), y)):\n    return 1\ne = g(x, y.detach())\n",
    b"def f(x, y):\n    p = g(x.detach(), y)\n# a note\n    q = g(x, y.detach())\n    return p + q\n",
    b"@dec(w.detach())\ndef f(x, y):\n    return g(x, y.detach())\n",
    # one marker per function, nested functions included: no pair anywhere
    b"def f(x, y):\n    return g(x.detach(), y)\n\n\nasync def h(x, y):\n    def inner():\n        return g(x, y.detach())\n    return inner\n",
    b"class M:\n    @property\n    def f(self):\n        return g(self.x.detach(), y)\n\n    def h(self):\n        return g(self.x, y.detach())\n",
]


@pytest.mark.parametrize("text", LONE)
def test_lone_definitions_answer_as_the_whole_tree(text):
    _check(text)


@pytest.mark.parametrize(
    "text, indent, expected",
    [
        (b"def f(x):\n    return x.detach()\n", b"", True),
        (b"@a\n@b.c(1)\nasync  def f(x):\n\n  # note\n# note\n\t\treturn x.detach()\n", b"", True),
        (b"def f(x): return x.detach()\n", b"", True),
        (b"    def f(self):\n        def inner():\n            return x.detach()\n", b"    ", True),
        # two markers; none; after the definition; a form feed; a `\r` line end; a decorator's line
        (b"def f(x):\n    return x.detach() + y.detach()\n", b"", False),
        (b"def f(x):\n    return x\n", b"", False),
        (b"def f(x):\n    pass\nq = x.detach()\n", b"", False),
        (b"    def f(self):\n        pass\n    q = x.detach()\n", b"    ", False),
        (b"def f(x):\n    pass\n  \fq = x.detach()\n", b"", False),
        (b"def f(x):\r\n    return x.detach()\r\n", b"", False),
        (b"@dec(x.detach())\ndef f(x):\n    pass\n", b"", False),
        # a decorator over two lines, a class, a header continued at column 0
        (b"@dec(\n    1)\ndef f(x):\n    return x.detach()\n", b"", False),
        (b"class A:\n    w = x.detach()\n", b"", False),
        (b"def f(x,\ny=1):\n    return x.detach()\n", b"", False),
    ],
)
def test_lone_definition(text, indent, expected):
    assert prechecks._lone_definition(text, 0, len(text), indent, gf002._MARKER) is expected


def test_lone_definitions_are_not_parsed():
    text = (
        b"import torch\n\n\ndef one(x):\n    return x.detach()\n\n\ndef broken(:\n    x.detach()\n\n\n"
        b"class M:\n    def a(self, x):\n        return x.detach()\n\n    def b(self, x, y):\n"
        b"        return g(x.detach(), y) + g(x, y.detach())\n"
    )
    state: dict = {}
    tree, whole = prechecks.marked_tree(text, text, state, gf002._MARKER, pairs=True)
    assert not whole and "tree" not in state
    (piece,) = tree.body  # neither `one` nor `broken` (its syntax error goes unseen, as outside the pieces)
    assert [(m.name, m.lineno) for m in piece.body] == [("b", 16)]
    assert gf002.might_match(text, text, {})
    # Without `pairs`, every marked run is parsed: `broken` does not parse, nor then the whole file.
    assert prechecks.marked_tree(text, text, {}, gf002._MARKER) is None
