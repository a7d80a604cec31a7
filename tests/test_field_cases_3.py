"""Third field test: methods on `self`, GF004's one-loss form, symbolic coefficients, fresh names.

Same conventions as `tests/test_field_cases.py` (whose helpers are reused):
each xfail is a minimal reproduction that asserts the correct behaviour, so it
starts passing (and the strict xfail turns into a failure to remove) once the
bug is fixed. Executed checks run original and rewrite through
`gradfix.harness` and compare every value and gradient: a fix offered as safe
must be exact (and must not turn a working step into one that raises).
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact


def _no_safe_fix(src: str, codes) -> None:
    result = _lint(src, codes)
    assert result.findings, "expected the pattern to be reported"
    assert not any(f.fixable for f in result.findings), [f.message for f in result.findings]


# ---------------------------------------------------------------------------
# 1. A callee `self.dist(...)` is resolved from the enclosing class's own body
#    only. What `self.dist` / `self.scale` is at run time can come from
#    elsewhere in the same file, and none of it is looked at:
#    - a mixin ahead of the class in a subclass's bases (`class Sub(Mixin,
#      Trainer)`) that defines `dist`, or whose `__init__` sets `self.scale`
#      to a trainable parameter (`_overridden` only walks classes derived from
#      `Trainer`, not the other bases that precede it in the MRO);
#    - the class patched after its definition: `Trainer.dist = ...`,
#      `setattr(Trainer, "dist", ...)`;
#    - the instance patched from outside: `t.dist = ...`,
#      `t.scale = nn.Parameter(...)`.
#    Each gets a safe GF001 fix; the trainable tensor read by the real callee
#    receives ∂f/∂θ where the original's two passes cancelled to 0.

_TRAINER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

W = nn.Parameter(torch.randn(3, 3))


class Trainer:
    def __init__(self):
        self.scale = 2.0
        self.a = torch.randn(4, 3, requires_grad=True)
        self.b = torch.randn(4, 3, requires_grad=True)

    def dist(self, u, v):
        return F.mse_loss(u * self.scale, v)

    def train_step(self):
        x, y = self.a * 2, self.b * 3
        l1 = self.dist(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -self.dist(x, y.detach())
        l2.backward()

"""

_STEP = """

def step():
    t.train_step()
"""

SELF_CALLEE_CASES = {
    "mixin_method": _TRAINER
    + """
class Projected:
    def dist(self, u, v):
        return F.mse_loss(u @ W, v)


class Sub(Projected, Trainer):
    pass


t = Sub()
"""
    + _STEP,
    "mixin_sets_parameter": _TRAINER
    + """
class LearnedScale:
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(2.0))


class Sub(LearnedScale, Trainer):
    pass


t = Sub()
"""
    + _STEP,
    "class_patched": _TRAINER
    + """
Trainer.dist = lambda self, u, v: F.mse_loss(u @ W, v)
t = Trainer()
"""
    + _STEP,
    "class_setattr": _TRAINER
    + """
setattr(Trainer, "dist", lambda self, u, v: F.mse_loss(u @ W, v))
t = Trainer()
"""
    + _STEP,
    "instance_patched": _TRAINER
    + """
t = Trainer()
t.dist = lambda u, v: F.mse_loss(u @ W, v)
"""
    + _STEP,
    "instance_attribute_parameter": _TRAINER
    + """
t = Trainer()
t.scale = nn.Parameter(torch.tensor(2.0))
"""
    + _STEP,
}


@pytest.mark.parametrize("name", list(SELF_CALLEE_CASES))
def test_self_callee_bound_elsewhere_is_unsafe(name):
    _no_safe_fix(SELF_CALLEE_CASES[name], ["GF001"])


@pytest.mark.parametrize("name", ["mixin_method", "mixin_sets_parameter", "class_patched", "instance_attribute_parameter"])
def test_self_callee_bound_elsewhere_executed(name):
    _safe_fix_is_exact(SELF_CALLEE_CASES[name], ["GF001"])


def test_self_callee_base_case_is_safe_and_exact():
    # The trainer alone (no subclass, no patch) keeps its safe fix: the xfails above are about the rebinding.
    src = _TRAINER + "t = Trainer()\n" + _STEP
    assert [f.fixable for f in _lint(src, ["GF001"]).findings] == [True]
    _safe_fix_is_exact(src, ["GF001"])


# ---------------------------------------------------------------------------
# 2. GF004 inlines a helper method `self.assoc(...)` found in the enclosing
#    class (`_helper_def`) without asking whether it is overridden: a subclass
#    of the same file (or a mixin, or `Trainer.assoc = ...`) that redefines
#    `assoc` runs a different computation, yet the rewrite inlines the base
#    class's expression and the fix is safe. (`classify` checks
#    `_overridden` for callees; the inlining path does not.)

_ASSOC = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.net_s = nn.Linear(4, 4)
        self.net_p = nn.Linear(4, 4)
        self.k = 2.0
        self.x = torch.randn(3, 4)

    def kl(self, p, q):
        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()

    def assoc(self, p, q):
        return self.kl(p, q.detach()) + self.kl(q.detach(), p)

    def train_step(self):
        s = torch.softmax(self.net_s(self.x), -1)
        p = torch.softmax(self.net_p(self.x), -1)
        rec = (s - p).abs().mean()
        s_loss = self.assoc(s, p)
        p_loss = self.assoc(p, s)
        loss1 = rec - self.k * s_loss
        loss2 = rec + self.k * p_loss
        loss1.backward(retain_graph=True)
        loss2.backward()

"""

INLINED_OVERRIDE_CASES = {
    "subclass_same_file": _ASSOC
    + """
class Sub(Trainer):
    def assoc(self, p, q):
        return self.kl(p, q.detach()) * 3.0 + self.kl(q.detach(), p)


t = Sub()
"""
    + _STEP,
    "mixin": _ASSOC
    + """
class Mixin:
    def assoc(self, p, q):
        return torch.sum(p * q.detach())


class Sub(Mixin, Trainer):
    pass


t = Sub()
"""
    + _STEP,
    "class_patched": _ASSOC
    + """
Trainer.assoc = lambda self, p, q: torch.sum(p * q.detach())
t = Trainer()
"""
    + _STEP,
}


@pytest.mark.parametrize("name", list(INLINED_OVERRIDE_CASES))
def test_gf004_inlined_method_overridden_is_unsafe(name):
    _no_safe_fix(INLINED_OVERRIDE_CASES[name], ["GF004"])


@pytest.mark.parametrize("name", list(INLINED_OVERRIDE_CASES))
def test_gf004_inlined_method_overridden_executed(name):
    _safe_fix_is_exact(INLINED_OVERRIDE_CASES[name], ["GF004"])


def test_gf004_inlined_method_base_case_is_safe_and_exact():
    src = _ASSOC + "t = Trainer()\n" + _STEP
    assert [f.fixable for f in _lint(src, ["GF004"]).findings] == [True, True]
    _safe_fix_is_exact(src, ["GF004"])


def test_gf004_subclass_overriding_inner_method_is_not_safe():
    # Overriding `kl` (a callee inside the helper) is seen (locked in; the xfails above are about `assoc`).
    src = _ASSOC + """
class Sub(Trainer):
    def kl(self, p, q):
        return torch.sum((p - q) ** 2)


t = Sub()
""" + _STEP
    assert not any(f.fixable for f in _lint(src, ["GF004"]).findings)


# ---------------------------------------------------------------------------
# 3. GF004 checks that every name carrying the terms is read elsewhere only as
#    a value, by the reads recorded in the function's scope. A carrier
#    declared `global` (or `nonlocal`) has its assignments in another scope,
#    so its reads are never looked at: an in-place change through it
#    (`G = s_loss; G.mul_(2)`), or a read in another function (`(G *
#    0.5).backward()`), keeps the fix safe. GF001 and GF002 say "gradfix
#    cannot resolve the reads of `l2`" for a global and are unsafe.

_LOOP = """\
import torch
import torch.nn as nn

torch.manual_seed(0)


def kl(p, q):
    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()


net_s = nn.Linear(4, 4)
net_p = nn.Linear(4, 4)
inp = torch.randn(3, 2, 4)
k = 3.0
G = None


def step():
    series = [torch.softmax(net_s(inp[i]), -1) for i in range(3)]
    prior = [torch.softmax(net_p(inp[i]), -1) for i in range(3)]
    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += kl(series[i], prior[i].detach())
        p_loss += kl(series[i].detach(), prior[i])
    loss = p_loss - k * s_loss
    loss.backward()
"""

GLOBAL_ALIAS_MUTATED = _LOOP.replace(
    "    loss = p_loss - k * s_loss\n", "    global G\n    G = s_loss\n    G.mul_(2)\n    loss = p_loss - k * s_loss\n"
)

GLOBAL_READ_ELSEWHERE = (
    _LOOP.replace("    loss = p_loss - k * s_loss\n", "    global G\n    G = s_loss\n    loss = p_loss - k * s_loss\n")
    .replace("def step():", "def train():")
    .replace("    loss.backward()\n", "    loss.backward(retain_graph=True)\n")
    + """

def step():
    train()
    (G * 0.5).backward()
"""
)

NONLOCAL_ALIAS_MUTATED = _LOOP.split("def step():")[0] + """def make():
    G = None

    def step():
        nonlocal G
        series = [torch.softmax(net_s(inp[i]), -1) for i in range(3)]
        prior = [torch.softmax(net_p(inp[i]), -1) for i in range(3)]
        s_loss, p_loss = 0.0, 0.0
        for i in range(len(series)):
            s_loss += kl(series[i], prior[i].detach())
            p_loss += kl(series[i].detach(), prior[i])
        G = s_loss
        G.mul_(2)
        loss = p_loss - k * s_loss
        loss.backward()

    return step


step = make()
"""

CARRIER_SCOPE_CASES = [GLOBAL_ALIAS_MUTATED, GLOBAL_READ_ELSEWHERE, NONLOCAL_ALIAS_MUTATED]
CARRIER_SCOPE_IDS = ["global_alias_mutated", "global_read_in_other_function", "nonlocal_alias_mutated"]


@pytest.mark.parametrize("src", CARRIER_SCOPE_CASES, ids=CARRIER_SCOPE_IDS)
def test_gf004_global_carrier_is_unsafe(src):
    _no_safe_fix(src, ["GF004"])


@pytest.mark.parametrize("src", CARRIER_SCOPE_CASES, ids=CARRIER_SCOPE_IDS)
def test_gf004_global_carrier_executed(src):
    _safe_fix_is_exact(src, ["GF004"])


# Branches and unfollowed statements that mutate a carrier through an alias, a
# call or a walrus stay unsafe (the alias is read as a tensor): locked in.
ALIAS_IN_BRANCH = {
    "alias_mul_in_if": "    if k > 0:\n        l = s_loss\n        l.mul_(2)\n",
    "function_call_in_if": "    if k > 0:\n        scale(s_loss)\n",
    "walrus_in_if": "    if (l := s_loss) is not None:\n        l.mul_(2)\n",
    "list_alias_in_if": "    box = [s_loss]\n    if k > 0:\n        box[0].mul_(2)\n",
}


@pytest.mark.parametrize("name", list(ALIAS_IN_BRANCH))
def test_gf004_carrier_mutated_through_alias_in_branch_is_unsafe(name):
    src = _LOOP.replace("    loss = p_loss - k * s_loss\n", ALIAS_IN_BRANCH[name] + "    loss = p_loss - k * s_loss\n").replace(
        "G = None\n", "G = None\n\n\ndef scale(t):\n    t.mul_(2.0)\n    return t\n"
    )
    _no_safe_fix(src, ["GF004"])


# ---------------------------------------------------------------------------
# 4. GF004 writes the coefficient ratio into the one evaluation, which sits
#    where the first term was evaluated (in the loop, or before the first
#    term's statement). A coefficient name bound once to a number *after*
#    the terms (`lam = 3.0` just before `loss = p_loss - lam * s_loss`, a
#    common layout) is accepted as a constant, so the fix is safe, and the
#    rewrite reads `lam` before it is assigned: UnboundLocalError where the
#    original ran. (The same with `lam` rebound after the loop is unsafe,
#    but the message blames "not a number ... a tensor that requires grad".)

COEF_AFTER_LOOP = _LOOP.replace("    loss = p_loss - k * s_loss\n", "    lam = 3.0\n    loss = p_loss - lam * s_loss\n")

COEF_AFTER_TERMS = """\
import torch

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def kl(p, q):
    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()


def step():
    x, y = torch.softmax(a, -1), torch.softmax(b, -1)
    rec = (a ** 2).mean()
    s = kl(x, y.detach())
    p = kl(x.detach(), y)
    lam = 3.0
    loss1 = rec - lam * s
    loss2 = rec + p
    loss1.backward(retain_graph=True)
    loss2.backward()
"""


@pytest.mark.parametrize("src", [COEF_AFTER_LOOP, COEF_AFTER_TERMS], ids=["loop", "straight_line"])
def test_gf004_coefficient_bound_after_terms_executed(src):
    _safe_fix_is_exact(src, ["GF004"])


def test_gf004_coefficient_bound_before_terms_is_safe_and_exact():
    # `lam = 3.0` before the loop: the same fix is safe and exact (the xfail above is about the order).
    src = COEF_AFTER_LOOP.replace("    lam = 3.0\n", "").replace("    s_loss, p_loss = 0.0, 0.0\n", "    lam = 3.0\n    s_loss, p_loss = 0.0, 0.0\n")
    assert [f.fixable for f in _lint(src, ["GF004"]).findings] == [True]
    _safe_fix_is_exact(src, ["GF004"])


# 4b. The new orientation (the second term carries the gradients when b/a
#     divides by a name) multiplies by the name instead: with a divisor that
#     is zero in the original (`p_loss / z` with `z = 0.0`: an infinite loss,
#     but finite gradients for `net_s`, which only `s_loss` reaches), the
#     rewrite routes `inf * 0` into `series`: NaN gradients where the original
#     had finite ones. (Before the orientation change this raised
#     ZeroDivisionError.) `z` is a module constant bound to 0.0, so the
#     divisor is known to be zero. Low priority: the original divides by zero.

ZERO_DIVISOR_IN_LOSS = _LOOP.replace("k = 3.0\n", "k = 3.0\nz = 0.0\n").replace(
    "    loss = p_loss - k * s_loss\n", "    loss = p_loss / z - s_loss\n"
)


def test_gf004_zero_divisor_in_loss_executed():
    _safe_fix_is_exact(ZERO_DIVISOR_IN_LOSS, ["GF004"])


def test_gf004_zero_divisor_in_loss_is_unsafe_and_says_why():
    result = _lint(ZERO_DIVISOR_IN_LOSS, ["GF004"])
    assert [f.fixable for f in result.findings] == [False]
    assert "divides by `z`, bound to zero" in result.findings[0].message


@pytest.mark.parametrize(
    "loss",
    ["p_loss / k - s_loss", "p_loss - (1 / k) * s_loss", "k * p_loss - k * k * s_loss"],
    ids=["p_over_k", "one_over_k", "k_and_k_squared"],
)
def test_gf004_symbolic_ratio_orientation_is_safe_and_exact(loss):
    src = _LOOP.replace("    loss = p_loss - k * s_loss\n", f"    loss = {loss}\n")
    assert [f.fixable for f in _lint(src, ["GF004"]).findings] == [True]
    _safe_fix_is_exact(src, ["GF004"])


# ---------------------------------------------------------------------------
# 5. GF002 drops a term name that has no other read (`e_latent = ...` goes
#    away), but `locals()` reads every name: a step that logs its losses
#    through `locals()` (a common metrics idiom) loses the `e_latent` entry,
#    and indexing it raises KeyError. The fix is safe.

GF002_LOCALS = """\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
history = []


def step():
    z_q, z_e = a * 2, b * 3
    q_latent = F.mse_loss(z_q, z_e.detach())
    e_latent = F.mse_loss(z_q.detach(), z_e)
    loss = q_latent + 0.25 * e_latent
    loss.backward()
    history.append({k: v.item() for k, v in locals().items() if k.endswith("_latent")})
"""


def test_gf002_locals_is_unsafe():
    _no_safe_fix(GF002_LOCALS, ["GF002"])


def test_gf002_locals_executed():
    _safe_fix_is_exact(GF002_LOCALS, ["GF002"])


# ---------------------------------------------------------------------------
# Held-out corpus (stop 35): Python 2's `__metaclass__ = abc.ABCMeta` in a class body was named as
# a special method that runs without a call, which made every merge of the file unsafe. In
# Python 3 it is an attribute no machinery reads; a class-body binding of a special method that
# Python does run (`__radd__ = kept.append`) still counts.

_PY2_METACLASS = """\
import abc
import torch


class Base(object):
    __metaclass__ = {value}


def f(u, v):
    return (u - v).pow(2).mean()


w_h = torch.randn(16, 16, requires_grad=True)
w_x = torch.randn(16, 16, requires_grad=True)
w_y = torch.randn(16, 16, requires_grad=True)
a = torch.randn(8, 16)
h = torch.tanh(a @ w_h)
x = h @ w_x
y = h @ w_y
l1 = f(x.detach(), y)
l1.backward(retain_graph=True)
l2 = -1 * f(x, y.detach())
l2.backward()
print(w_h.grad.sum().item(), w_x.grad.sum().item(), w_y.grad.sum().item())
"""


def test_python2_metaclass_attribute_is_no_code():
    src = _PY2_METACLASS.format(value="abc.ABCMeta")
    result = _lint(src, ("GF001",))
    assert [(f.code, f.line, f.col, f.fixable) for f in result.findings] == [("GF001", 22, 11, True)]
    _safe_fix_is_exact(src, ("GF001",))


def test_a_special_method_bound_in_a_class_body_still_counts():
    kept = _PY2_METACLASS.replace("    __metaclass__ = {value}\n", "    __radd__ = print\n")
    result = _lint(kept, ("GF001",))
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", False)]
    assert "`__radd__ = print` (line 6) runs without a call by name" in result.findings[0].message
