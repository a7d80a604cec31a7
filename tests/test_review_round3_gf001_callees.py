"""Wrong safe fixes of a third review (reviewer G, `tests/review_round3/G_*`), each a program kept as a reproducer.

Causes, and what now stops the safe fix:

- Class machinery of the file that replaces a callee method without binding its name (08, 09): a
  metaclass whose `__new__` stores into the class namespace, a class decorator returning a subclass.
  A class decorator, class keyword (`metaclass=`), computed base or `__init_subclass__` on any class
  sharing the MRO makes `self.name` unproven, unless the decorator or metaclass is on
  `vocabulary.PLAIN_CLASS_MAKERS` (`bindings_index.class_machinery`).
- Random draws reached through a name in the callee body (01, 02): a call of a parameter, of a local
  bound to a function value, of a subscripted or conditional expression, and a function value read
  as a default argument or a local (`noise=torch.randn_like`, `drop = F.dropout`) are not pure.
- The callee reads `requires_grad` (or `grad_fn`, `is_leaf`, ...) of an argument (07): the detached
  argument and `grad_scale(...)` differ there, so the fix is unsafe.
- Random torch calls in a custom backward of the file (06): not constants of the linearity check.
- Arguments shared by both calls that the rewrite wraps in `grad_scale` (03, 04, 05): an `nn.Module`,
  a function, a sparse tensor made `grad_scale` raise; such an argument must be proven a dense tensor.

Each used to get a safe fix that changed a gradient or made the program raise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round3").glob("G_*.py"))
# None: no finding; (code, text of the unsafe reason); or (code, None): a safe fix, executed exact.
EXPECTED = {
    "G_08_metaclass_wraps_callee_method": ("GF001", "`metaclass=NoisyMethods` (line 26) runs code that may rewrite the class namespace"),
    "G_09_class_decorator_returns_subclass": ("GF001", "the class decorator `@input_noise` of `Aligner` (line 18)"),
}


def test_every_case_has_an_expectation() -> None:
    assert {p.stem for p in CASES} == set(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path: Path) -> None:
    check_case(path, EXPECTED[path.stem])
