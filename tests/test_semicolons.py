"""Statements joined by `;` (issue 12): read one per line, reported and fixed as the file is written.

Each test lints a snippet whose statements share lines, and checks the positions against the file
as written (line and column of a statement moved to a line of its own), the line numbers messages
cite, the exact rewritten text (only the joined lines a fix changes are split) and, for the
rewrites, that original and rewrite give the same gradients when executed.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gradfix import semicolons
from gradfix.engine import lint_bytes
from gradfix.findings import TextEdit
from gradfix.options import LintOptions

HEAD = """\
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Linear(4, 4)
x0 = torch.randn(8, 4)


def f(a, b):
    return ((a - b) ** 2).mean()

"""
IMPORT = "from gradfix.autograd import grad_scale\n"


def _lint(src: str, codes=("GF001",), **flags):
    result = lint_bytes(src.encode(), "t.py", LintOptions(tuple(codes), **flags))
    assert result.error is None, result.error
    return result


def _fixed(src: str, codes=("GF001",)) -> str:
    result = _lint(src, codes, fix=True)
    assert result.fixed is not None and result.remaining == []
    return result.fixed.decode()


def _same_gradients(src: str, fixed: str) -> None:
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, fixed, filename="t.py", device="cpu", repeat=0)
    assert report.error is None, report.error
    bad = [f"{r.path} {r.what}: abs {r.max_abs} rel {r.max_rel}" for r in report.rows if not r.ok]
    assert report.rows and not bad, bad


SEED = HEAD + textwrap.dedent(
    """\
    def step():
        h = net(x0); x = h * 2; y = h + 1
        l1 = f(x.detach(), y); l1.backward(retain_graph=True)
        l2 = -1 * f(x, y.detach()); l2.backward()
    """
)


def test_the_seed_on_joined_lines_is_found_where_written():
    (finding,) = _lint(SEED).findings
    # `f` of the second loss: line 15, after `    l2 = -1 * `; the first evaluation is cited as line 14.
    assert (finding.code, finding.line, finding.col, finding.end_line, finding.end_col) == ("GF001", 15, 15, 15, 31)
    assert "(line 14 and here)" in finding.message
    assert finding.fixable


def test_a_fix_splits_the_lines_it_changes_and_no_others():
    fixed = _fixed(SEED)
    assert fixed == HEAD.replace("nn as nn\n", "nn as nn\n" + IMPORT) + textwrap.dedent(
        """\
        def step():
            h = net(x0); x = h * 2; y = h + 1
            l1 = f(grad_scale(x, -1.0), y)
            l1.backward()
        """
    )
    _same_gradients(SEED, fixed)


def test_a_statement_moved_off_a_line_keeps_its_column_and_the_lines_below_their_numbers():
    src = HEAD + textwrap.dedent(
        """\
        def step():
            h = net(x0); x = h * 2; y = h + 1; l1 = f(x.detach(), y); l1.backward(retain_graph=True); l2 = f(x, y.detach())
            l2.backward()
            return h
        """
    )
    # Both losses with coefficient 1: the gradients of f(x, y), without an op.
    (finding,) = _lint(src).findings
    assert (finding.line, finding.col) == (13, 100)
    assert src.splitlines()[12][99:].startswith("f(x, y.detach())")
    fixed = _fixed(src)
    assert fixed.endswith(
        textwrap.dedent(
            """\
            def step():
                h = net(x0)
                x = h * 2
                y = h + 1
                l1 = f(x, y)
                l1.backward()
                return h
            """
        )
    )
    _same_gradients(src, fixed)


def test_a_statement_after_a_multiline_one_keeps_the_lines_above():
    src = HEAD + textwrap.dedent(
        """\
        def step():
            h = net(
                x0); x = h * 2; y = h + 1
            l1 = f(x.detach(),
                   y); l1.backward(retain_graph=True)
            l2 = f(x, y.detach()); l2.backward()
        """
    )
    (finding,) = _lint(src).findings
    assert (finding.line, finding.col) == (17, 10)
    assert "(line 15 and here)" in finding.message
    fixed = _fixed(src)
    assert fixed.endswith(
        textwrap.dedent(
            """\
            def step():
                h = net(
                    x0); x = h * 2; y = h + 1
                l1 = f(x,
                       y)
                l1.backward()
            """
        )
    )
    _same_gradients(src, fixed)


def test_a_comment_above_and_the_comment_of_the_line_stay():
    src = HEAD + textwrap.dedent(
        """\
        def step():
            h = net(x0)
            x = h * 2
            y = h + 1
            # the two losses
            l1 = f(x.detach(), y); l1.backward(retain_graph=True); n = 1  # first
            l2 = -f(x, y.detach()); l2.backward(); n += 1;
            return n
        """
    )
    fixed = _fixed(src)
    assert fixed.endswith(
        "    # the two losses\n"
        "    l1 = f(grad_scale(x, -1.0), y)\n"
        "    n = 1  # first\n"
        "    l1.backward()\n"
        "    n += 1;\n"
        "    return n\n"
    )
    _same_gradients(src, fixed)


def test_a_line_whose_noqa_names_gradfix_is_not_split():
    # Split by another rule's fix, the line's `# noqa` would stand after its last statement only,
    # and what it suppressed would come back in the next pass (review, stop 21): such a line
    # stays one statement to gradfix, for every rule.
    src = HEAD + textwrap.dedent(
        """\
        def step():
            h = net(x0); x = h * 2; y = h + 1
            l1 = f(x.detach(), y); l1.backward(retain_graph=True)
            l2 = -1 * f(x, y.detach()); l2.backward(); p = (net(x0) ** 2).mean(); p.backward(retain_graph=True)  # noqa: GF001
        """
    )
    result = _lint(src, ("GF001", "GF005"), fix=True, unsafe_fixes=True)
    assert result.findings == [] and result.fixed is None
    # A noqa for another tool (flake8's E702, multiple statements on one line) does not stop it.
    other = src.replace("# noqa: GF001", "# noqa: E702")
    line = other.split("\n")[14]
    found = [(f.code, f.line, f.col) for f in _lint(other, ("GF001", "GF005")).findings]
    assert found == [("GF001", 15, 15), ("GF005", 15, line.index("retain_graph") + 1)]
    assert semicolons.split(cst.parse_module(src)) is not None  # the other joined lines still split


def test_a_trailing_semicolon_stays_on_the_last_statement():
    # In a notebook it hides the cell's output.
    src = SEED.replace("l2.backward()\n", "l2.backward(); h.sum();\n")
    fixed = _fixed(src)
    assert fixed.endswith("    l1.backward()\n    h.sum();\n"), fixed


def test_an_evaluation_earlier_on_the_same_line_is_cited_so():
    src = HEAD + "def step():\n    h = net(x0); x = h * 2; y = h + 1\n    l1 = f(x.detach(), y); l1.backward(retain_graph=True); l2 = -1 * f(x, y.detach()); l2.backward()\n"
    (finding,) = _lint(src).findings
    assert finding.line == 14 and "(earlier on this line and here)" in finding.message, finding.message


def test_a_backslash_beside_a_semicolon_keeps_the_line_whole():
    # Removing that `;` would join two lines of the file: such a line stays one statement to
    # gradfix (not read, as before the split existed).
    src = SEED.replace("l2 = -1 * f(x, y.detach()); l2.backward()", "l2 = -1 * f(x, y.detach()); \\\n        l2.backward()")
    assert _lint(src).findings == []
    assert semicolons.split(cst.parse_module(src)) is not None  # the other joined lines still split


def test_a_one_line_compound_statement_is_not_split():
    src = HEAD + "def step(c):\n    if c: l1 = f(x0.detach(), x0); l1.backward(retain_graph=True)\n"
    assert semicolons.split(cst.parse_module(src)) is None


def test_crlf_and_no_final_newline():
    src = (HEAD + "def step():\n    h = net(x0)\n    a = h.sum(); b = h.abs().sum()\n    a.backward(retain_graph=True); b.backward()").replace("\n", "\r\n")
    (finding,) = _lint(src, ("GF003",)).findings
    assert (finding.line, finding.col) == (15, 5)
    assert "(line 15)" in finding.message
    fixed = _fixed(src, ("GF003",))
    assert fixed == src.replace("a.backward(retain_graph=True); b.backward()", "(a + b).backward()")


def test_line_map_message_maps_cited_lines_outside_backticks():
    module = cst.parse_module("a = 1; b = 2\nc = 3; d = 4\ne = 5\n")
    new, lines = semicolons.split(module)
    assert new.code == "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"
    assert [lines.line(n) for n in range(1, 6)] == [1, 1, 2, 2, 3]
    assert [lines.position(n, 0) for n in range(1, 6)] == [(1, 0), (1, 7), (2, 0), (2, 7), (3, 0)]
    assert lines.message("`f(line 5)` (line 5), lines 2, 4 and line 3") == "`f(line 5)` (line 3), lines 1, 2 and line 2"
    # Code quoting a backtick: the citations are mapped all the same.
    assert lines.message("`d[\"a`b\"]` (line 5)") == "`d[\"a`b\"]` (line 3)"
    # Two statements of one line of the file are cited once.
    assert lines.message("(line 3, 4)") == "(line 2)"


def test_line_map_grows_edits_to_whole_lines_of_the_file():
    module = cst.parse_module("a = 1; b = 2; c = 3\nd = 4\n")
    _, lines = semicolons.split(module)
    # Replacing `b = 2` alone replaces the file's line 1, the rest of it written one per line.
    assert lines.edits([TextEdit(2, 3, "b = 20\n")]) == (TextEdit(1, 2, "a = 1\nb = 20\nc = 3\n"),)
    # Two edits inside one line of the file become one.
    assert lines.edits([TextEdit(1, 2, "a = 10\n"), TextEdit(3, 4, "")]) == (TextEdit(1, 2, "a = 10\nb = 2\n"),)
    # An insertion between two statements of a line, and one between lines of the file.
    assert lines.edits([TextEdit(2, 2, "z = 0\n")]) == (TextEdit(1, 2, "a = 1\nz = 0\nb = 2\nc = 3\n"),)
    assert lines.edits([TextEdit(4, 4, "z = 0\n")]) == (TextEdit(2, 2, "z = 0\n"),)
    # An edit of a line that was not split is only renumbered.
    assert lines.edits([TextEdit(4, 5, "d = 40\n")]) == (TextEdit(2, 3, "d = 40\n"),)
