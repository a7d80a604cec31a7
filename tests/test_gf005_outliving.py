"""GF005 and values that outlive one call of the function (review, stop 21).

Each file in `tests/gf005_outliving/` backpropagates, with `retain_graph=True`, through a graph
built once and kept past the call: a default argument, an attribute set in `__init__` or a class
body, a module-level name set by `global` in a setup function or by `globals()`, a name imported
from another module, a value `graph_free` used to accept (`torch.as_tensor(t)`, `nn.Tanh()(...)`,
a distribution's parameters), a module-level object written through an alias, a parameter, a view,
`setattr` or `register_buffer`, an argument of an in-file caller (`inner(h); inner(h)`; the
`v_*` files: every way a review found to get a graph into a name passed, stop 22). Calling `step()` twice needs the kept graph. GF005 used to offer a
safe fix for each; every one must now be unsafe. The executed check: the original runs two steps,
the rewrite (applied with `--unsafe-fixes`) raises in the second.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

HERE = Path(__file__).resolve().parent / "gf005_outliving"
CASES = sorted(p for p in HERE.glob("*.py") if p.name != "shared_graph.py")


def _two_steps(source: str) -> None:
    sys.modules.pop("shared_graph", None)  # its graph is built afresh for each run
    sys.path.insert(0, str(HERE))
    try:
        namespace: dict = {"__name__": "train"}
        exec(compile(source, "train.py", "exec"), namespace)
        namespace["step"]()
        namespace["step"]()
    finally:
        sys.path.remove(str(HERE))
        sys.modules.pop("shared_graph", None)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_graph_that_outlives_the_call_keeps_the_fix_unsafe(path: Path):
    source = path.read_text()
    findings = lint_bytes(source.encode(), "train.py", LintOptions(("GF005",))).findings
    assert findings, "the pattern is found"
    assert not any(f.fixable for f in findings), [f.message for f in findings]
    pytest.importorskip("torch")
    _two_steps(source)  # the original runs
    fixed = lint_bytes(source.encode(), "train.py", LintOptions(("GF005",), fix=True, unsafe_fixes=True)).fixed
    assert fixed is not None
    with pytest.raises(RuntimeError, match="second time"):
        _two_steps(fixed.decode())
