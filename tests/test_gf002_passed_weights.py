"""GF002: a loss weight the file's own calls pass (stop 36).

Stop 35 took a weight bound to a caller's value (`self.beta = beta` in `__init__`, a parameter
`beta`) to be a number or a one-element tensor: the assumption of README "What a safe fix assumes
about other files". That holds for callers gradfix does not see, not for the ones the file shows:
`VectorQuantizer(32, 8, beta=torch.tensor([0.25, 1.0]))` in the same file got a safe fix whose
`grad_scale` raised where the original ran. Every call of the function in the file (by its name;
for `__init__` its class's or a subclass's, `super().__init__`, `functools.partial`) must now pass
a number, a one-element tensor it builds, a module name bound once to one of those, or a value of
its own caller (followed the same way); else the fix is unsafe and names the call. Each safe case
is executed against the original.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

VQ = """\
import functools
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class VectorQuantizer(nn.Module):
    def __init__(self, num_codes, dim, beta=0.25):
        super().__init__()
        self.beta = beta
        self.codebook = nn.Embedding(num_codes, dim)

    def forward(self, z_e):
        codes = torch.cdist(z_e, self.codebook.weight).argmin(1)
        z_q = self.codebook(codes)
        loss = F.mse_loss(z_q, z_e.detach()) + self.beta * F.mse_loss(z_q.detach(), z_e)
        return z_e + (z_q - z_e).detach(), loss


{BUILD}
encoder = nn.Linear(24, 8)
batch = torch.randn(16, 24)
z_q, vq_loss = quantizer(encoder(batch))
(z_q.pow(2).mean() + vq_loss.sum()).backward()
print(encoder.weight.grad.sum().item())
"""

REASON = "coefficient `self.beta` {why}: gradfix cannot prove it a number or a one-element tensor"


def _src(build: str) -> str:
    return VQ.replace("{BUILD}", build)


@pytest.mark.parametrize(
    "build",
    [
        "quantizer = VectorQuantizer(32, 8, 0.5)",
        "quantizer = VectorQuantizer(32, 8)",
        "quantizer = VectorQuantizer(32, 8, beta=torch.tensor([0.5], requires_grad=True))",
        "quantizer = VectorQuantizer(32, 8, np.float32(0.5))",
        "quantizer = VectorQuantizer(32, 8, nn.Parameter(torch.tensor(0.5)))",
        "BETA = torch.tensor(0.5)\nquantizer = VectorQuantizer(32, 8, BETA)\nprint(BETA.item())",
        # A subclass passes its own caller's number on.
        "class Big(VectorQuantizer):\n    def __init__(self, beta):\n        super().__init__(64, 8, beta=beta)\n\n\nquantizer = Big(0.75)",
        # A factory function passes its parameter on; its own caller passes a number.
        "def build(weight):\n    return VectorQuantizer(32, 8, weight)\n\n\nquantizer = build(0.5)",
        "make = functools.partial(VectorQuantizer, beta=0.5)\nquantizer = make(32, 8)",
        # Exported by name: what `import *` gives callers outside the file (the assumption's).
        "__all__ = ['VectorQuantizer']\nquantizer = VectorQuantizer(32, 8, 0.5)",
        "class Big(VectorQuantizer):\n    @classmethod\n    def build(cls):\n        return cls(32, 8, 0.5)\n\n\nquantizer = Big.build()",
    ],
)
def test_numbers_and_one_element_tensors_the_file_passes_are_safe_and_exact(build):
    src = _src(build)
    result = _lint(src, ["GF002"])
    assert [(f.code, f.line, f.fixable, f.fix.safe) for f in result.findings] == [("GF002", 17, True, True)]
    _safe_fix_is_exact(src, ["GF002"])


@pytest.mark.parametrize(
    "build, why",
    [
        ("quantizer = VectorQuantizer(32, 8, beta=torch.tensor([0.25, 1.0]))",
         "is passed `torch.tensor([0.25, 1.0])` as `beta` (line 21)"),
        ("quantizer = VectorQuantizer(32, 8, torch.ones(2))", "is passed `torch.ones(2)` as `beta` (line 21)"),
        ("BETA = torch.ones(2)\nquantizer = VectorQuantizer(32, 8, BETA)", "is passed `BETA` as `beta` (line 22)"),
        # One element when bound, resized in place before the call.
        ("BETA = torch.tensor(0.5)\nBETA.resize_(2)\nquantizer = VectorQuantizer(32, 8, BETA)",
         "is passed `BETA` as `beta` (line 23)"),
        ("class Big(VectorQuantizer):\n    pass\n\n\nquantizer = Big(32, 8, torch.ones(2))",
         "is passed `torch.ones(2)` as `beta` (line 25)"),
        ("def build(weight):\n    return VectorQuantizer(32, 8, weight)\n\n\nquantizer = build(torch.ones(2))",
         "is passed `torch.ones(2)` as `weight` (line 25)"),
        ("kwargs = {'beta': torch.ones(2)}\nquantizer = VectorQuantizer(32, 8, **kwargs)",
         "may be passed through `VectorQuantizer(32, 8, **kwargs)` (line 22)"),
        ("make = functools.partial(VectorQuantizer, beta=torch.ones(2))\nquantizer = make(32, 8)",
         "is passed `torch.ones(2)` as `beta` (line 21)"),
        # The module's `BETA` is a number, but the lambda's own `BETA` is what it passes.
        ("BETA = 0.5\nbuild = lambda BETA: VectorQuantizer(32, 8, BETA)\nquantizer = build(torch.ones(2))",
         "is passed `BETA` as `beta` (line 22)"),
        ("def build():\n    w = torch.ones(2)\n    return VectorQuantizer(32, 8, w)\n\n\nquantizer = build()",
         "is passed `w` as `beta` (line 23)"),
        # Calls under another name.
        ("make = VectorQuantizer\nquantizer = make(32, 8, torch.ones(2))",
         "is a parameter of `__init__`, named at line 21 (`VectorQuantizer`), where a call gradfix does not follow may pass it"),
        ("import sys\nquantizer = getattr(sys.modules[__name__], 'VectorQuantizer')(32, 8, torch.ones(2))",
         "is a parameter of `__init__`, named at line 22 (`'VectorQuantizer'`), where a call gradfix does not follow may pass it"),
        ("class Big(VectorQuantizer):\n    @classmethod\n    def build(cls):\n        return cls(32, 8, torch.ones(2))\n\n\nquantizer = Big.build()",
         "is passed `torch.ones(2)` as `beta` (line 24)"),
        ("quantizer = VectorQuantizer(32, 8)\nquantizer = type(quantizer)(32, 8, torch.ones(2))",
         "is passed `torch.ones(2)` as `beta` (line 22)"),
    ],
)
def test_what_else_the_file_passes_makes_the_fix_unsafe(build, why):
    result = _lint(_src(build), ["GF002"], unsafe=True)
    assert [(f.code, f.line, f.fix.safe, f.fix.unsafe_reason) for f in result.findings] == [
        ("GF002", 17, False, REASON.format(why=why))
    ]


def test_a_weight_parameter_of_the_function_itself():
    """A plain-name weight, a parameter of the function holding the sum, passed a tensor of two
    elements by a caller of the file's caller: unsafe, naming the outer call."""
    src = """\
import torch
import torch.nn.functional as F


def vq_loss(z_q, z_e, beta):
    return F.mse_loss(z_q, z_e.detach()) + beta * F.mse_loss(z_q.detach(), z_e)


def outer(z_q, z_e, weight):
    return vq_loss(z_q, z_e, weight)


z_e = torch.randn(4, 3, requires_grad=True)
z_q = torch.randn(4, 3, requires_grad=True)
outer(z_q, z_e, {WEIGHT}).sum().backward()
print(z_e.grad.sum().item(), z_q.grad.sum().item())
"""
    unsafe = _lint(src.replace("{WEIGHT}", "torch.ones(2)"), ["GF002"], unsafe=True)
    assert [(f.line, f.fix.safe, f.fix.unsafe_reason) for f in unsafe.findings] == [
        (6, False, "coefficient `beta` is passed `torch.ones(2)` as `weight` (line 15): gradfix cannot prove it a number or a one-element tensor")
    ]
    safe = src.replace("{WEIGHT}", "0.3")
    assert [(f.line, f.fix.safe) for f in _lint(safe, ["GF002"]).findings] == [(6, True)]
    _safe_fix_is_exact(safe, ["GF002"])


LOSS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQLoss(nn.Module):
    def forward(self, z_q, z_e, beta=0.25):
        return F.mse_loss(z_q, z_e.detach()) + beta * F.mse_loss(z_q.detach(), z_e)


{DEF}
crit = VQLoss()
z_e = torch.randn(4, 3, requires_grad=True)
z_q = torch.randn(4, 3, requires_grad=True)
{CALL}.sum().backward()
print(z_e.grad.sum().item(), z_q.grad.sum().item())
"""


@pytest.mark.parametrize("call", ["crit(z_q, z_e)", "crit(z_q, z_e, 0.5)", "crit(z_q, z_e, beta=torch.tensor(0.5))", "crit.forward(z_q, z_e, 2)"])
def test_a_forward_parameter_every_call_passes_a_number_for_is_safe_and_exact(call):
    """`forward` runs through the module's instances (`crit(...)`), not by its name: every call of
    the file but an imported function's or a builtin's may be one, and each passes a number."""
    src = LOSS.replace("{DEF}", "").replace("{CALL}", call)
    assert [(f.line, f.fix.safe) for f in _lint(src, ["GF002"]).findings] == [(8, True)]
    _safe_fix_is_exact(src, ["GF002"])


@pytest.mark.parametrize(
    "define, call, why",
    [
        ("", "crit(z_q, z_e, torch.ones(2))", "is passed `torch.ones(2)` as `beta` (line 15)"),
        ("", "(lambda c: c(z_q, z_e, beta=torch.ones(2)))(crit)", "is passed `torch.ones(2)` as `beta` (line 15)"),
        # A decorated function: its wrapper is what a call reaches.
        ("def weighted(fn):\n    return lambda z_q, z_e, beta=0.25: fn(z_q, z_e, torch.ones(2))\n\n\n@weighted\ndef loss(z_q, z_e, beta=0.25):\n    return F.mse_loss(z_q, z_e.detach()) + beta * F.mse_loss(z_q.detach(), z_e)\n",
         "loss(z_q, z_e)", "is a parameter of `loss`, which is decorated (gradfix does not follow the calls of its wrapper)"),
    ],
)
def test_a_forward_or_decorated_parameter_passed_otherwise_is_unsafe(define, call, why):
    result = _lint(LOSS.replace("{DEF}", define).replace("{CALL}", call), ["GF002"], unsafe=True)
    reasons = [f.fix.unsafe_reason for f in result.findings if not f.fix.safe]
    assert f"coefficient `beta` {why}: gradfix cannot prove it a number or a one-element tensor" in reasons


FIELD = """\
import dataclasses
from typing import NamedTuple
import torch
import torch.nn.functional as F


{CLASS}
    def __call__(self, z_q, z_e):
        return F.mse_loss(z_q, z_e.detach()) + self.beta * F.mse_loss(z_q.detach(), z_e)


crit = Loss({ARGS})
z_e = torch.randn(4, 3, requires_grad=True)
z_q = torch.randn(4, 3, requires_grad=True)
crit(z_q, z_e).sum().backward()
print(z_e.grad.sum().item(), z_q.grad.sum().item())
"""

DATACLASS = "@dataclasses.dataclass\nclass Loss:\n    beta: float = 0.25\n"
NAMED = "class Loss(NamedTuple):\n    beta: float = 0.25\n"
PLAIN = "class Loss:\n    beta = 0.25\n"


@pytest.mark.parametrize(
    "cls, args",
    [(DATACLASS, ""), (DATACLASS, "beta=0.5"), (DATACLASS, "0.5"), (NAMED, "torch.tensor(0.5)"), (PLAIN, "")],
)
def test_a_class_field_the_constructor_is_passed_a_number_for_is_safe_and_exact(cls, args):
    src = FIELD.replace("{CLASS}", cls).replace("{ARGS}", args)
    assert [(f.line, f.fix.safe) for f in _lint(src, ["GF002"]).findings] == [(_line(src, "return F.mse_loss"), True)]
    _safe_fix_is_exact(src, ["GF002"])


@pytest.mark.parametrize(
    "cls, args, why",
    [
        # (Review of stop 35's proof: the class body's `0.25` was taken for the instance's value.)
        (DATACLASS, "beta=torch.ones(2)", "is passed `torch.ones(2)` as `beta` (line {CALL})"),
        (DATACLASS, "torch.ones(2)", "is passed `torch.ones(2)` as `beta` (line {CALL})"),
        (NAMED, "torch.ones(2)", "is passed `torch.ones(2)` as `beta` (line {CALL})"),
        (DATACLASS, "**{'beta': torch.ones(2)}", "may be passed through `Loss(**{'beta': torch.ones(2)})` (line {CALL})"),
        (DATACLASS, ")\ncrit = dataclasses.replace(crit, beta=torch.ones(2)", "is passed `torch.ones(2)` as `beta` (line {NEXT})"),
        (NAMED, ")._replace(beta=torch.ones(2)", "is passed `torch.ones(2)` as `beta` (line {CALL})"),
    ],
)
def test_a_class_field_the_constructor_is_passed_a_tensor_for_is_unsafe(cls, args, why):
    src = FIELD.replace("{CLASS}", cls).replace("{ARGS}", args)
    why = why.replace("{CALL}", str(_line(src, "crit = Loss("))).replace("{NEXT}", str(_line(src, "crit = Loss(") + 1))
    assert [(f.line, f.fix.safe, f.fix.unsafe_reason) for f in _lint(src, ["GF002"], unsafe=True).findings] == [
        (_line(src, "return F.mse_loss"), False, f"coefficient `self.beta` {why}: gradfix cannot prove it a number or a one-element tensor")
    ]


def _line(src: str, text: str) -> int:
    return next(n for n, line in enumerate(src.splitlines(), 1) if text in line)
