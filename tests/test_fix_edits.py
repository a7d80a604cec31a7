"""Fixes as text edits (gradfix.fixes.rewrite, gradfix.fixes.apply).

A rule builds a `Rewrite` on libcst's tree; `to_fix` turns it into whole-line edits by lining
up old and new block bodies by identity and generating only the changed statements, at their
block's indentation. These tests hold that construction to an independent one: the whole
module transformed by libcst and generated in full (what gradfix did before edits existed).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import List, Tuple

import libcst as cst
import pytest

from gradfix.analysis.positions import node_maps
from gradfix.engine import lint_bytes
from gradfix.fixes.apply import apply_fixes
from gradfix.fixes.imports import with_imports
from gradfix.fixes.rewrite import Layout, Rewrite, rewrite_body
from gradfix.findings import TextEdit
from gradfix.options import LintOptions
from gradfix.rules import ALL_RULES

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted(p for p in (ROOT / "fixtures").glob("GF*/**/*.py") if not p.name.endswith(".fixed.py"))
ALL = LintOptions(tuple(r.CODE for r in ALL_RULES), unsafe_fixes=True)


class _WholeModule(cst.CSTTransformer):
    """The oracle: every block rebuilt with the rewrite's replacements, the module generated in full."""

    def __init__(self, replacements) -> None:
        super().__init__()
        self.replacements = replacements

    def _body(self, original, updated):
        if not any(s in self.replacements for s in original):
            return updated
        # Untouched statements keep their updated form (a nested block may have changed).
        swapped = {id(o): u for o, u in zip(original, updated)}
        return [swapped.get(id(s), s) for s in rewrite_body(original, self.replacements)]

    def leave_Module(self, original_node, updated_node):
        return updated_node.with_changes(body=self._body(original_node.body, updated_node.body))

    def leave_IndentedBlock(self, original_node, updated_node):
        return updated_node.with_changes(body=self._body(original_node.body, updated_node.body))


def _rewrites(monkeypatch, data: bytes, path: str, options: LintOptions = ALL) -> List[Tuple[Rewrite, Layout, dict, object]]:
    """Every (rewrite, layout, op names, fix) the rules build on `data`."""
    import gradfix.rules._blocks as blocks

    seen = []
    real = blocks.to_fix

    def spy(rewrite, layout, op_names):
        fix = real(rewrite, layout, op_names)
        seen.append((rewrite, layout, dict(op_names), fix))
        return fix

    monkeypatch.setattr(blocks, "to_fix", spy)
    lint_bytes(data, path, options)
    return seen


def _oracle(rewrite: Rewrite, layout: Layout, op_names: dict) -> str:
    module = layout.module.visit(_WholeModule(rewrite.replacements))
    if rewrite.imports:
        module = with_imports(module, rewrite.imports, op_names)
    return module.code


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_each_fix_as_edits_writes_what_the_whole_module_rewrite_writes(monkeypatch, path):
    data = path.read_bytes()
    rewrites = _rewrites(monkeypatch, data, path.name)
    inline = _rewrites(monkeypatch, data, path.name, LintOptions(ALL.codes, unsafe_fixes=True, grad_scale_import="inline"))
    # A near miss of one rule may be another's finding: their fixes are checked too.
    assert rewrites or "negative" in path.parts, "a fixture that is not a near miss has a fix"
    for rewrite, layout, names, fix in rewrites + inline:
        new, applied = apply_fixes(layout.module.code, [_finding(fix)])
        assert applied and fix.edits
        assert new == _oracle(rewrite, layout, names)


def _finding(fix):
    from gradfix.findings import Finding

    return Finding("x.py", 1, 1, "GF000", "m", fix)


@pytest.mark.parametrize("path", FIXTURES[::7], ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_a_statement_generated_at_its_block_indentation_is_its_source_text(path):
    """What the edits rest on: libcst writes any statement, at its block's indentation, exactly as the file has it."""
    module = cst.parse_module(path.read_bytes())
    layout = Layout(module, node_maps(module).spans)
    blocks = {id(block): (block, indents) for block, indents in layout.blocks.values()}
    statements = [(s, indents) for block, indents in blocks.values() for s in block.body]
    assert len(statements) > 3
    for statement, indents in statements:
        text = "".join(layout.lines[layout.first_line(statement) - 1 : layout.end_line(statement) - 1])
        assert layout.render([statement], indents) == text


def _fix_of(source: str, codes=("GF005",), **options):
    result = lint_bytes(source.encode(), "t.py", LintOptions(codes, **options))
    assert result.findings, source
    return result.findings[0].fix


STEP = """\
import torch
import torch.nn.functional as F

net = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)


def train_step(x, y):
    opt.zero_grad()
    # one step
    loss = F.mse_loss(net(x), y)
    loss.backward(retain_graph=True)  # why?
    opt.step()
"""


def test_an_edit_is_the_changed_line_only():
    fix = _fix_of(STEP)
    assert fix.safe and fix.edits == (TextEdit(12, 13, "    loss.backward()  # why?\n"),)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_file_without_a_final_newline_gets_none_back(newline):
    source = STEP.replace("  # why?\n    opt.step()\n", "").replace("\n", newline)
    assert source.endswith("retain_graph=True)")
    result = lint_bytes(source.encode(), "t.py", LintOptions(("GF005",), fix=True))
    assert result.applied == 1
    assert result.fixed.decode() == source.replace("retain_graph=True", "")


def test_tab_indented_blocks_keep_their_tabs():
    source = STEP.replace("    ", "\t").replace("def train_step(x, y):", "def train_step(x, y):\n\tif True:").replace("\n\t", "\n\t\t")
    source = source.replace("\n\t\tif True:", "\n\tif True:")
    fix = _fix_of(source)
    assert fix.edits == (TextEdit(13, 14, "\t\tloss.backward()  # why?\n"),)


SEED = """\
import torch
import torch.nn.functional as F

x = torch.randn(3, requires_grad=True)
y = torch.randn(3, requires_grad=True)
l1 = F.mse_loss(x.detach(), y)
l1.backward(retain_graph=True)
l2 = -1 * F.mse_loss(x, y.detach())
l2.backward()
"""


def test_fixes_pickle_and_hold_no_libcst_node():
    result = lint_bytes(SEED.encode(), "s.py", LintOptions(("GF001",)))
    (finding,) = result.findings
    assert finding.fix.safe and finding.fix.edits
    assert pickle.loads(pickle.dumps(result)).findings[0].fix == finding.fix

    def nodes(value, depth=0):
        if isinstance(value, cst.CSTNode):
            yield value
        elif depth < 6 and isinstance(value, (tuple, list, frozenset, set)):
            for item in value:
                yield from nodes(item, depth + 1)
        elif depth < 6 and hasattr(value, "__dataclass_fields__"):
            for name in value.__dataclass_fields__:
                yield from nodes(getattr(value, name), depth + 1)

    assert not list(nodes(result))


def test_the_import_two_fixes_share_is_written_once():
    imports, body = SEED.split("\n", 3)[:2], SEED.split("\n", 3)[3]
    function = "\n\ndef step():\n" + "".join("    " + line + "\n" for line in body.splitlines())
    twice = "\n".join(imports) + "\n" + function + function.replace("step", "step_2")
    result = lint_bytes(twice.encode(), "s.py", LintOptions(("GF001",), fix=True))
    assert result.applied == 2 and len(result.fixed_findings) == 2
    fixed = result.fixed.decode()
    assert fixed.count("from gradfix.autograd import grad_scale\n") == 1
    assert fixed.count("backward()") == 2


def test_overlapping_edits_wait_for_the_next_pass():
    from gradfix.findings import Finding, Fix

    text = "a\nb\nc\n"
    first = Finding("t.py", 1, 1, "GF000", "m", Fix(True, "d", edits=(TextEdit(1, 3, "A\n"),)))
    second = Finding("t.py", 2, 1, "GF000", "m", Fix(True, "d", edits=(TextEdit(2, 4, "B\n"),)))
    touching = Finding("t.py", 3, 1, "GF000", "m", Fix(True, "d", edits=(TextEdit(3, 3, "inserted\n"),)))
    new, applied = apply_fixes(text, [second, first, touching])
    assert applied == [first, touching]
    assert new == "A\ninserted\nc\n"


MATCH_CASE = '''\
import torch
import torch.nn as nn

net = nn.Linear(4, 4)
x0 = torch.randn(8, 4)


def f(a, b):
    return ((a - b) ** 2).mean()


def step():
    match 1:
        case 1:
            h = net(x0)
            x = h * 2
            y = h + 1
            l1 = f(x.detach(), y)
            l1.backward(retain_graph=True)
            l2 = -1 * f(x, y.detach())
            l2.backward()
'''


def test_a_fix_inside_a_match_case_gets_the_case_body_indentation():
    # A `match` indents its `case` lines itself (libcst's `Match.indent`): the rewrite of a case
    # body's statements was one level too shallow and did not parse (found in review, stop 21).
    result = lint_bytes(MATCH_CASE.encode(), "t.py", LintOptions(("GF001",), fix=True))
    assert result.error is None and result.fixed is not None
    assert result.fixed.decode() == MATCH_CASE.replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom gradfix.autograd import grad_scale\n").replace(
        "            l1 = f(x.detach(), y)\n            l1.backward(retain_graph=True)\n            l2 = -1 * f(x, y.detach())\n            l2.backward()\n",
        "            l1 = f(grad_scale(x, -1.0), y)\n            l1.backward()\n",
    )
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(MATCH_CASE, result.fixed.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is None and report.rows and all(r.ok for r in report.rows)
