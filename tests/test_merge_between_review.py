"""Merges of backward passes (GF001, GF003) and what runs between or inside them (review, stop 24).

Each file in `tests/merge_between/` used to get a safe fix that changed a gradient or made the
program raise: a module cast (`model.half()`) or an in-place layer (`nn.ReLU(inplace=True)`)
between the passes, an operand that reads `.grad` (written by the first pass), `._grad` read or
cleared, `requires_grad` set between the passes, a last loss written inline that overwrites a
saved tensor or reads `.grad`, and `self.manual_backward` merged with a plain `.backward()`.

Now each gets no finding (the pattern is not there) or an unsafe fix whose reason names the cause.
Executed: the original runs; where an unsafe fix rewrites the file, the rewritten program prints
something else or raises (the proof that the fix could not be safe).
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from gradfix.rules import select

HERE = Path(__file__).resolve().parent / "merge_between"
CASES = sorted(HERE.glob("*.py"))
ALL = tuple(rule.CODE for rule in select(["ALL"]))
# None: no finding; otherwise (code, text of the unsafe reason).
EXPECTED = {
    "01_module_cast_between": ("GF003", "`model.half()` between the backward calls"),
    "02_inplace_module_between": ("GF003", "`act()` between the backward calls"),
    "03_inplace_module_on_operand_gf001": ("GF001", "`act()` between the two passes"),
    "07_operand_reads_grad": None,
    "08_underscore_grad_read_between": None,
    "08b_underscore_grad_clear_between": None,
    "09_requires_grad_store_between": None,
    "10_inplace_in_last_inline_loss": None,
    "10b_grad_read_in_last_inline_loss": None,
    "11_manual_backward_mixed_with_plain": None,
}


def _run(source: str) -> str:
    """What the program prints, or the exception it raises."""
    out = io.StringIO()
    sys.path.insert(0, str(HERE / "stub"))  # a stand-in for pytorch_lightning (11)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, "train.py", "exec"), {"__name__": "__main__"})
    except Exception as exc:  # noqa: BLE001 - the rewrite's failure is the observation
        return f"raised {type(exc).__name__}"
    finally:
        sys.path.remove(str(HERE / "stub"))
        sys.modules.pop("pytorch_lightning", None)
    return out.getvalue()


def test_every_case_has_its_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_no_safe_fix_and_the_unsafe_one_is_wrong(path: Path):
    source = path.read_text()
    findings = lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings
    expected = EXPECTED[path.stem]
    if expected is None:
        assert findings == []
    else:
        code, reason = expected
        assert [(f.code, f.fixable) for f in findings] == [(code, False)]
        assert reason in findings[0].fix.unsafe_reason
    assert lint_bytes(source.encode(), "train.py", LintOptions(ALL, fix=True)).fixed in (None, source.encode())
    pytest.importorskip("torch")
    original = _run(source)
    assert not original.startswith("raised"), original
    unsafe = lint_bytes(source.encode(), "train.py", LintOptions(ALL, fix=True, unsafe_fixes=True)).fixed
    if expected is not None:
        assert unsafe is not None and unsafe != source.encode()
        assert _run(unsafe.decode()) != original
