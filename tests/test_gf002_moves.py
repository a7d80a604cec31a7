"""GF002 rewrites that move a term's binding (`_branched_finding`, names defined above the sum):
reproducers from a review, each a working program whose fix was offered as safe and changed a
value or a gradient when executed. Each must now get no safe fix; where the rewrite was wrong,
executing it shows why it must not be safe.

- r1: a generator made before the `if` reads the other term's name lazily, between the passes;
- r2: a property of a class of the file reads the module global between the passes;
- r3: a caught exception between the passes skips the original binding, not the moved one;
- r4, r8: `z.view(-1)[0] = v`, a store through a view of an operand;
- r5, r9-r13: `z_q = codebook.T.T[:5]`, `codebook.view(6, 4)[:5]`..., views changed by a store into the codebook;
- r6, r7: in a loop, a read above the definition sees the previous iteration's value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradfix.analysis.exprs import paths_overlap
from tests.test_field_cases import _lint

HERE = Path(__file__).resolve().parent / "gf002_moves"
CASES = sorted(p.name for p in HERE.glob("r*.py"))


def test_the_cases_are_there():
    assert len(CASES) == 13


@pytest.mark.parametrize("name", CASES)
def test_no_safe_fix(name):
    src = (HERE / name).read_text()
    result = _lint(src, ["GF002"])
    assert not any(f.fixable for f in result.findings), [f.message for f in result.findings]


@pytest.mark.parametrize("name", ["r6_loop_carried_read.py", "r7_loop_carried_read_no_if.py"])
def test_a_loop_carried_read_makes_the_fix_unsafe(name):
    result = _lint((HERE / name).read_text(), ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`q_latent` is also read as a tensor" in result.findings[0].message


@pytest.mark.parametrize("name", ["r6_loop_carried_read.py", "r7_loop_carried_read_no_if.py"])
def test_the_unsafe_rewrite_of_a_loop_carried_read_differs(name):
    harness = pytest.importorskip("gradfix.harness")
    src = (HERE / name).read_text()
    fixed = _lint(src, ["GF002"], unsafe=True).fixed
    report = harness.verify_pair(src, fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is None
    assert [r.key for r in report.rows if not r.ok]  # why it is not safe


def test_view_attributes_overlap_what_they_view():
    assert paths_overlap(("codebook", "[]"), ("codebook", "T", "T", "[]"))
    assert paths_overlap(("x", "mT"), ("x", "[]"))
    assert paths_overlap(("x", "data"), ("x", "[]"))
    assert not paths_overlap(("x", "grad"), ("x", "[]"))  # `.grad` is a tensor of its own
    assert not paths_overlap(("a", "T"), ("b", "[]"))
    assert not paths_overlap(("data",), ("z",))  # a name, not an attribute


def test_an_exception_caught_between_definitions_above_the_sum():
    """Names defined above the sum (`_defined_fix`) move nothing: the one evaluation stands where
    the first definition stood, so an exception caught between the definitions leaves the same
    state in both programs (x1: safe, executed with and without the exception). A handler that
    then reads the first term as a tensor makes the fix unsafe, as any other read does (x2)."""
    from tests.test_field_cases import _safe_fix_is_exact

    src = (HERE / "x1_caught_between_definitions.py").read_text()
    assert [f.fixable for f in _lint(src, ["GF002"]).findings] == [True]
    _safe_fix_is_exact(src, ["GF002"])
    result = _lint((HERE / "x2_caught_then_read.py").read_text(), ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`q_latent` is also read as a tensor (line 18)" in result.findings[0].message
