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
    "G_01_random_default_argument": ("GF001", "its default `noise=torch.randn_like` takes `torch.randn_like`, which draws random numbers, as a value"),
    "G_02_random_local_alias": ("GF001", "takes `F.dropout`, which draws random numbers, as a value"),
    "G_03_module_argument_grad_scale_crash": ("GF001", "`critic`, passed to both evaluations, becomes `grad_scale(critic, 0.0)`"),
    "G_04_gf002_function_argument_grad_scale_crash": ("GF002", "`torch.mean`, passed to both evaluations, becomes `grad_scale(torch.mean, 1.0 + BETA)`"),
    "G_05_sparse_shared_argument_crash": ("GF001", None),
    "G_06_random_backward_in_custom_function": ("GF001", "calls `torch.rand_like()`, which draws new random numbers at each backward call"),
    "G_07_callee_branches_on_requires_grad": ("GF001", "reads `target.requires_grad` (line 15), which differs between a detached argument"),
    "G_08_metaclass_wraps_callee_method": ("GF001", "`metaclass=NoisyMethods` (line 26) runs code that may rewrite the class namespace"),
    "G_09_class_decorator_returns_subclass": ("GF001", "the class decorator `@input_noise` of `Aligner` (line 18)"),
}


def test_every_case_has_an_expectation() -> None:
    assert {p.stem for p in CASES} == set(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path: Path) -> None:
    check_case(path, EXPECTED[path.stem])


CALLS_THROUGH_VALUES = '''
import torch
import torch.nn.functional as F
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

def crit(a, b, c=True):
    {body}

def step():
    l1 = crit(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * crit(x, y.detach())
    l2.backward()
'''


@pytest.mark.parametrize(
    "body, reason",
    [
        ("return ((F.dropout if c else F.relu)(a) * b).sum()", "a function computed where it is called"),
        ("return ([F.dropout][0](a) * b).sum()", "a function computed where it is called"),
        ("return max([a.sum(), b.sum()], key=torch.rand_like)", "with `key=torch.rand_like`"),
        ("f = c\n    return f(a, b)", "calls `f`, bound by `f = c`"),
        ("return c(a, b)", "calls its parameter `c`"),
        ("f = F.mse_loss\n    return f(a, b)", None),
    ],
)
def test_calls_through_values_in_a_callee(body: str, reason) -> None:
    """A call of a parameter, of a local bound to anything but a proven-pure function, or of a
    computed expression is not pure; a local bound to a pure torch function is."""
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    source = CALLS_THROUGH_VALUES.format(body=body)
    findings = lint_bytes(source.encode(), "train.py", LintOptions(("GF001",))).findings
    assert [f.code for f in findings] == ["GF001"]
    if reason is None:
        assert findings[0].fixable
    else:
        assert not findings[0].fixable and reason in findings[0].fix.unsafe_reason


SHARED_ARGUMENT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.randn(4, 3, requires_grad=True)
y = torch.randn(4, 3, requires_grad=True)
{setup}

def crit(a, b, w):
    return ((a - b) ** 2 * w).sum()

def step({params}):
    l1 = {call1}
    l1.backward(retain_graph=True)
    l2 = -1 * {call2}
    l2.backward()
'''


@pytest.mark.parametrize(
    "setup, params, shared, callee, safe",
    [
        ("w = torch.ones(4, 3)", "", "w", "crit", True),
        ("w = torch.eye(3).to_sparse()", "", "w", "crit", True),
        ("w = (torch.ones(4, 3), 2.0)", "", "w", "crit", True),
        ("", "w", "w", "crit", False),  # a parameter of the caller: anything
        ("w = nn.Linear(3, 3)", "", "w", "crit", False),
        ("w = torch.mean", "", "w", "crit", False),
        ("", "w", "w", "F.mse_loss", True),  # an argument of a listed torch function: a tensor or number
    ],
)
def test_shared_argument_is_proven_scalable(setup: str, params: str, shared: str, callee: str, safe: bool) -> None:
    """An argument passed to both evaluations becomes `grad_scale(arg, a + b)`: safe only where it is
    proven a tensor or number (`MergeSafety.scalable`)."""
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    if callee == "crit":
        call1, call2 = f"crit(x.detach(), y, {shared})", f"crit(x, y.detach(), {shared})"
    else:
        call1, call2 = f"{callee}(x.detach(), y, {shared})", f"{callee}(x, y.detach(), {shared})"
    source = SHARED_ARGUMENT.format(setup=setup, params=params, call1=call1, call2=call2)
    findings = lint_bytes(source.encode(), "train.py", LintOptions(("GF001",))).findings
    assert [f.code for f in findings] == ["GF001"]
    assert findings[0].fixable == safe, findings[0].fix.unsafe_reason
    if not safe:
        assert f"`{shared}`, passed to both evaluations" in findings[0].fix.unsafe_reason


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr"])
def test_grad_scale_takes_other_layouts(layout: str) -> None:
    """`grad_scale` of a sparse tensor: the same value (a copy: `view_as` is not implemented there)
    and a scaled gradient."""
    torch = pytest.importorskip("torch")
    from gradfix.autograd import grad_scale

    dense = torch.eye(3)
    x = (dense.to_sparse() if layout == "sparse_coo" else dense.to_sparse_csr()).requires_grad_()
    y = grad_scale(x, 2.0)
    assert y.layout == x.layout and torch.equal(y.to_dense(), dense)
    if layout == "sparse_coo":
        torch.sparse.mm(y, torch.ones(3, 2)).sum().backward()
        assert torch.equal(x.grad.to_dense(), 4.0 * dense)


CLASS_MACHINERY = '''
import abc
import dataclasses
import torch
import torch.nn.functional as F

{before}

{decorator}
class Aligner({bases}):
    {body}
    def crit(self, a, b):
        return F.mse_loss(a, b)

    def step(self, x, y):
        l1 = self.crit(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -1 * self.crit(x, y.detach())
        l2.backward()
'''


@pytest.mark.parametrize(
    "before, decorator, bases, body, reason",
    [
        ("", "@dataclasses.dataclass", "", "", None),
        ("", "", "metaclass=abc.ABCMeta", "", None),
        ("", "", "metaclass=type", "", None),
        ("class Base:\n    def __init_subclass__(cls, **kw):\n        pass", "", "Base", "", "`Base.__init_subclass__`"),
        ("def make():\n    return object", "", "make()", "", "its base `make()`"),
        ("class D:\n    def __set_name__(self, owner, name):\n        pass", "", "", "d = D()", "`D.__set_name__`"),
        ("class M(type):\n    pass\nclass Base(metaclass=M):\n    pass", "", "Base", "", "`metaclass=M`"),
        ("def wrap(cls):\n    return cls", "@wrap", "", "", "the class decorator `@wrap`"),
    ],
)
def test_class_machinery_makes_methods_unproven(before: str, decorator: str, bases: str, body: str, reason) -> None:
    """Code run when the class (or one sharing its MRO) is created may replace `crit` without binding
    its name (`bindings_index.class_machinery`); `dataclass`, `ABCMeta` and `type` keep it."""
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    source = CLASS_MACHINERY.format(before=before, decorator=decorator, bases=bases, body=body)
    findings = lint_bytes(source.encode(), "train.py", LintOptions(("GF001",))).findings
    assert [f.code for f in findings] == ["GF001"]
    if reason is None:
        assert findings[0].fixable, findings[0].fix.unsafe_reason
    else:
        assert not findings[0].fixable and reason in findings[0].fix.unsafe_reason
