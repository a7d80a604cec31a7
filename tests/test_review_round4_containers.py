"""Review, round 4 (stop 25): a container proven free of a graph from its display (`outs = []`)
filled under another name before the loop: `alias = outs; alias.append(h)`, or a helper of the file
(`fill(outs, h)`). The stores checked are those made through the container's own name, so a
container handed on (bound to another name, passed to a call, returned, put in a display) is no
longer proven (`loops._handed_on`): the GF003 merge in the loop frees the graph the next
iteration backpropagates through again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round4").glob("P_*.py"))
REASON = "is a container the function hands on (to another name or a call) before the loop reads it"
EXPECTED = {
    "P_01_list_filled_through_an_alias": ("GF003", REASON),
    "P_02_list_filled_by_a_helper": ("GF003", REASON),
}


def test_every_case_has_its_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_no_safe_fix_and_the_unsafe_one_is_wrong(path: Path):
    check_case(path, EXPECTED[path.stem])


def test_a_container_filled_by_its_own_name_only_stays_safe():
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    source = (Path(__file__).parent / "review_round4" / "P_01_list_filled_through_an_alias.py").read_text()
    source = source.replace("    alias = outs\n    alias.append(h)\n", "    outs.append(w.detach())\n")
    findings = lint_bytes(source.encode(), "train.py", LintOptions(("GF003",))).findings
    assert [(f.code, f.fixable) for f in findings] == [("GF003", True)]
