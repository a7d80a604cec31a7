"""Purity proofs behind safe fixes (gradfix.analysis.callees, .bodies, .bindings_index), from field cases.

Defaults of helper parameters, random layers inside torch.nn containers, and
methods of the enclosing class called on `self`. Every safe fix here is also
executed against the original (`gradfix.harness`): a fix offered as safe must
be exact.
"""

from __future__ import annotations

import textwrap

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

HEAD = """\
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
W = torch.randn(3, 3, requires_grad=True)
EPS = 1e-4

"""


def _src(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def _lint(src: str, codes, *, fix: bool = True):
    result = lint_bytes(src.encode(), "train.py", LintOptions(codes, fix=fix, unsafe_fixes=False))
    assert result.error is None
    return result


def _safe_fix_is_exact(src: str, codes) -> bool:
    """Every safe fix applied to `src` keeps values and gradients; True when one was applied."""
    harness = pytest.importorskip("gradfix.harness")
    result = _lint(src, codes)
    if result.fixed is None:
        return False
    report = harness.verify_pair(src, result.fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is None
    assert [r.key for r in report.rows if not r.ok] == []
    return True


def _gf001(helper: str, call: str = "dist") -> str:
    return _src(
        helper
        + f"""

def step():
    x, y = a * 2, b * 3
    l1 = {call}(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -{call}(x, y.detach())
    l2.backward()
"""
    )


# ---------------------------------------------------------------------------
# 1. Default argument values are read by the body through the parameter.

CONSTANT_DEFAULTS = {
    "number": "def dist(u, v, eps=1e-4):\n    return F.mse_loss(u + eps, v)\n",
    "negative": "def dist(u, v, dim=-1):\n    return (u - v).pow(2).sum(dim=dim).mean()\n",
    "string": 'def dist(u, v, reduction="mean"):\n    return F.mse_loss(u, v, reduction=reduction)\n',
    "none": "def dist(u, v, weight=None):\n    return F.mse_loss(u, v)\n",
    "global_number": "def dist(u, v, eps=EPS):\n    return F.mse_loss(u + eps, v)\n",
    "lambda_number": "dist = lambda u, v, k=2.0: F.mse_loss(k * u, v)\n",
    "kwonly_number": "def dist(u, v, *, k=2.0):\n    return F.mse_loss(k * u, v)\n",
}


@pytest.mark.parametrize("name", list(CONSTANT_DEFAULTS))
def test_constant_default_keeps_the_fix_safe(name):
    src = _gf001(CONSTANT_DEFAULTS[name])
    result = _lint(src, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", True)]
    assert _safe_fix_is_exact(src, ["GF001"])


def test_call_of_a_parameter_with_a_pure_default_is_unsafe():
    # The body check does not see the call sites: a caller may pass another function for `fn`
    # (a random one, `torch.randn_like`, draws anew at each evaluation; review round 3, G_01).
    src = _gf001("def dist(u, v, fn=F.mse_loss):\n    return fn(u, v)\n")
    result = _lint(src, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", False)]
    assert "calls its parameter `fn`" in result.findings[0].fix.unsafe_reason


TENSOR_DEFAULTS = {
    "trainable_global": ("def dist(u, v, w=W):\n    return F.mse_loss(u @ w, v)\n", "`w=W` reads `W`"),
    "call": ("def dist(u, v, w=torch.ones(3, 3, requires_grad=True)):\n    return F.mse_loss(u @ w, v)\n", "is computed by a call"),
    "attribute": ("lin = nn.Linear(3, 3)\n\n\ndef dist(u, v, w=lin.weight):\n    return F.mse_loss(u @ w, v)\n", "reads `lin`"),
    "posonly": ("def dist(u, v, w=W, /):\n    return F.mse_loss(u @ w, v)\n", "`w=W`"),
    "in_tuple": ("def dist(u, v, ws=(W, 1.0)):\n    return F.mse_loss(u @ ws[0], v)\n", "reads `W`"),
    "lambda_in_default": ("def dist(u, v, g=lambda t: t @ W):\n    return F.mse_loss(g(u), v)\n", "is a lambda"),
}


@pytest.mark.parametrize("name", list(TENSOR_DEFAULTS))
def test_default_that_may_be_a_trainable_tensor_is_unsafe(name):
    helper, reason = TENSOR_DEFAULTS[name]
    src = _gf001(helper)
    result = _lint(src, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", False)]
    assert "its default" in result.findings[0].message and reason in result.findings[0].message
    _safe_fix_is_exact(src, ["GF001"])


def test_default_of_a_helper_the_callee_calls_is_checked_too():
    src = _gf001(
        "def inner(u, v, w=W):\n    return F.mse_loss(u @ w, v)\n\n\ndef dist(u, v):\n    return inner(u, v) * 2.0\n"
    )
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`inner`" in result.findings[0].message and "`w=W`" in result.findings[0].message


def test_random_body_wins_over_unknown_default():
    # Dropout in the body: no pattern (two draws), whatever the default is.
    src = _gf001("def dist(u, v, w=W):\n    return F.mse_loss(F.dropout(u @ w, 0.5), v)\n")
    assert _lint(src, ["GF001"], fix=False).findings == []


def test_decorated_helper_is_unsafe():
    src = _gf001("import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef dist(u, v):\n    return F.mse_loss(u, v)\n")
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "decorated with `@functools.lru_cache(maxsize=None)`" in result.findings[0].message


# ---------------------------------------------------------------------------
# 2. Random layers inside torch.nn containers: no pattern, as for a bare nn.Dropout.

DROPOUT_CRITICS = {
    "bare": "critic = nn.Dropout(0.3)",
    "nested_sequential": "critic = nn.Sequential(nn.Linear(6, 8), nn.Sequential(nn.ReLU(), nn.Dropout(0.3)), nn.Linear(8, 1))",
    "ordered_dict": (
        "critic = nn.Sequential(collections.OrderedDict([('fc1', nn.Linear(6, 8)), ('drop', nn.Dropout(0.3)), "
        "('fc2', nn.Linear(8, 1))]))"
    ),
    "star_list": "layers = [nn.Linear(6, 8), nn.AlphaDropout(0.3), nn.Linear(8, 1)]\ncritic = nn.Sequential(*layers)",
    "named_layer": "drop = nn.Dropout(0.3)\ncritic = nn.Sequential(nn.Linear(6, 8), drop, nn.Linear(8, 1))",
    "module_list_star": "blocks = nn.ModuleList([nn.Linear(6, 8), nn.RReLU(), nn.Linear(8, 1)])\ncritic = nn.Sequential(*blocks)",
    "comprehension": "critic = nn.Sequential(*[nn.Dropout(0.1) for _ in range(2)], nn.Linear(6, 1))",
}


@pytest.mark.parametrize("name", list(DROPOUT_CRITICS))
def test_container_with_random_layer_is_not_reported(name):
    src = _src(
        DROPOUT_CRITICS[name]
        + """


def step():
    x, y = a * 2, b * 3
    l1 = critic(torch.cat([x.detach(), y], 1)).mean()
    l1.backward(retain_graph=True)
    l2 = -critic(torch.cat([x, y.detach()], 1)).mean()
    l2.backward()
"""
    )
    assert _lint(src, ["GF001", "GF004"], fix=False).findings == []


def test_container_with_random_layer_on_self_is_not_reported():
    src = _src(
        """
        class Trainer:
            def __init__(self):
                self.critic = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 1))

            def step(self):
                x, y = a * 2, b * 3
                l1 = self.critic(torch.cat([x.detach(), y], 1)).mean()
                l1.backward(retain_graph=True)
                l2 = -self.critic(torch.cat([x, y.detach()], 1)).mean()
                l2.backward()
        """
    )
    assert _lint(src, ["GF001"], fix=False).findings == []


def test_deterministic_container_is_still_reported():
    src = _src(
        """
        critic = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))


        def step():
            x, y = a * 2, b * 3
            l1 = critic(torch.cat([x.detach(), y], 1)).mean()
            l1.backward(retain_graph=True)
            l2 = -critic(torch.cat([x, y.detach()], 1)).mean()
            l2.backward()
        """
    )
    assert [f.code for f in _lint(src, ["GF001"], fix=False).findings] == ["GF001"]


# ---------------------------------------------------------------------------
# 3. Methods of the enclosing class called on `self`.

TRAINER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Trainer:
    def __init__(self):
        self.net = nn.Linear(3, 3)
        self.W = torch.randn(3, 3, requires_grad=True)
        self.k = 2.0
        self.x = torch.randn(4, 3)
        self.y = torch.randn(4, 3)

    def kl(self, p, q):
        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()

    def step(self):
        p = torch.softmax(self.net(self.x), -1)
        q = torch.softmax(self.y * 2, -1).requires_grad_()
        l1 = self.kl(p.detach(), q)
        l1.backward(retain_graph=True)
        l2 = -self.kl(p, q.detach())
        l2.backward()


trainer = Trainer()


def step():
    trainer.step()
"""


def test_pure_method_on_self_gets_a_safe_fix():
    result = _lint(TRAINER, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", True)]
    assert "not assigned exactly once" not in result.findings[0].message
    assert _safe_fix_is_exact(TRAINER, ["GF001"])


METHOD_VARIANTS = {
    # name: (replacement for the body of `kl`, or a whole-source transform), fixable, words in the message
    "reads_trainable_attribute": (
        "return F.mse_loss(p @ self.W, q)",
        False,
        "reads `self.W`",
    ),
    "reads_number_attribute": ("return self.k * F.mse_loss(p, q)", True, None),
    "calls_module_attribute": ("return F.mse_loss(self.net(p), q)", False, "`self.net`"),
    "passes_self_on": ("return helper(self, p, q)", False, "uses `self` itself"),
    "calls_pure_method": ("return self.inner(p, q) * 2.0", True, None),
    "calls_unknown_method": ("return self.missing(p, q)", False, "neither a method of its class"),
}


@pytest.mark.parametrize("name", list(METHOD_VARIANTS))
def test_method_body_on_self(name):
    body, fixable, words = METHOD_VARIANTS[name]
    src = TRAINER.replace(
        "        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()\n",
        f"        {body}\n\n    def inner(self, p, q):\n        return F.mse_loss(p, q)\n",
    ).replace("class Trainer:", "def helper(t, p, q):\n    return F.mse_loss(p @ t.W, q)\n\n\nclass Trainer:")
    result = _lint(src, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", fixable)]
    if words is not None:
        assert words in result.findings[0].message
    _safe_fix_is_exact(src, ["GF001"])


def test_method_defined_twice_is_unsafe():
    src = TRAINER.replace("    def step(self):", "    def kl(self, p, q):\n        return F.mse_loss(p, q)\n\n    def step(self):")
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "defined more than once in its class" in result.findings[0].message


def test_method_also_assigned_on_self_is_unsafe():
    src = TRAINER.replace("        self.k = 2.0\n", "        self.k = 2.0\n        self.kl = nn.KLDivLoss()\n")
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "both defined in its class and assigned on `self`" in result.findings[0].message


def test_method_overridden_in_a_subclass_is_unsafe():
    src = TRAINER.replace(
        "trainer = Trainer()",
        "class Weighted(Trainer):\n    def kl(self, p, q):\n        return F.mse_loss(p @ self.W, q)\n\n\ntrainer = Weighted()",
    )
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "overridden in a subclass" in result.findings[0].message
    _safe_fix_is_exact(src, ["GF001"])


def test_number_attribute_also_modified_is_unsafe():
    src = TRAINER.replace(
        "        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()\n",
        "        return self.k * F.mse_loss(p, q)\n\n    def anneal(self):\n        self.k *= 0.5\n",
    )
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "reads `self.k`" in result.findings[0].message


def test_staticmethod_on_self_is_safe():
    src = TRAINER.replace("    def kl(self, p, q):", "    @staticmethod\n    def kl(p, q):")
    result = _lint(src, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", True)]
    assert _safe_fix_is_exact(src, ["GF001"])


def test_method_with_trainable_default_is_unsafe():
    src = TRAINER.replace("    def kl(self, p, q):", "    def kl(self, p, q, w=None):").replace(
        "class Trainer:", "SCALE = torch.ones(1, requires_grad=True)\n\n\nclass Trainer:"
    ).replace("w=None", "w=SCALE")
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`w=SCALE`" in result.findings[0].message


METHOD_HELPER = """\
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


trainer = Trainer()


def step():
    trainer.train_step()
"""


def test_gf004_method_helper_calling_pure_method_fix_is_exact():
    result = _lint(METHOD_HELPER, ["GF004"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF004", True), ("GF004", True)]
    assert _safe_fix_is_exact(METHOD_HELPER, ["GF004"])


def test_gf004_method_helper_calling_impure_method_is_not_inlined():
    src = METHOD_HELPER.replace(
        "return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()",
        "return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean() + self.net_s.weight.sum()",
    )
    result = _lint(src, ["GF004"])
    assert [f.fixable for f in result.findings if f.fixable] == []
    _safe_fix_is_exact(src, ["GF004"])


def test_gf004_method_helper_reading_self_attributes_is_inlined():
    # Inlining copies the expression: `self.w` is the same attribute of the same
    # object where the helper is called (unlike a callee, which must own nothing).
    src = METHOD_HELPER.replace("        self.k = 2.0\n", "        self.k = 2.0\n        self.eps = torch.full((4,), 1e-3)\n").replace(
        "return self.kl(p, q.detach()) + self.kl(q.detach(), p)",
        "return self.kl(p + self.eps, q.detach() + self.eps) + self.kl(q.detach() + self.eps, p + self.eps)",
    )
    result = _lint(src, ["GF004"])
    assert [f.code for f in result.findings] == ["GF004", "GF004"]
    assert _safe_fix_is_exact(src, ["GF004"])


@pytest.mark.parametrize(
    "body",
    [
        "self = self.net\n        return F.mse_loss(p @ self.weight, q)",
        "for self in [self.net]:\n            p = p @ self.weight\n        return F.mse_loss(p, q)",
    ],
    ids=["assign", "loop"],
)
def test_method_rebinding_self_is_unsafe(body):
    src = TRAINER.replace(
        "        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()\n", f"        {body}\n"
    )
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`self`" in result.findings[0].message


# ---------------------------------------------------------------------------
# Decorators: `torch.compile` computes what the body says (its fix is safe and
# exact, also through the harness, whose state skips what dynamo injects into
# the globals); `torch.no_grad` and unknown decorators change it or may.


@pytest.mark.parametrize("decorator", ["@torch.compile", "@torch.compile(dynamic=False)"])
def test_torch_compile_decorated_helper_gets_a_safe_exact_fix(decorator):
    src = _gf001(f"{decorator}\ndef dist(u, v):\n    return F.mse_loss(u, v)\n")
    result = _lint(src, ["GF001"], fix=False)
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", True)]
    assert _safe_fix_is_exact(src, ["GF001"])


@pytest.mark.parametrize("decorator", ["@torch.no_grad()", "@functools.lru_cache"])
def test_other_decorators_make_the_helper_unknown(decorator):
    src = _gf001(f"{decorator}\ndef dist(u, v):\n    return F.mse_loss(u, v)\n").replace("import collections", "import collections\nimport functools")
    result = _lint(src, ["GF001"], fix=False)
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", False)]
    assert f"is decorated with `{decorator}`" in result.findings[0].message


# ---------------------------------------------------------------------------
# `self.kl` / `self.k` bound outside the class body (`CalleeClassifier.bound_elsewhere`):
# related classes (subclasses, mixins beside the class in a subclass's bases, its bases),
# stores from outside (`Trainer.kl = ...`, `t.k = ...`, `setattr`, `__dict__`), the same
# for the attributes a method reads. Unrelated classes and a base's own `def` (which the
# class's `def` comes before in every MRO) keep the fix safe.

READS_K = "        return self.k * torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()\n"
KL_BODY = "        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()\n"

BOUND_ELSEWHERE = {
    # name: (text before `trainer = Trainer()`, text after it, body of `kl` reads `self.k`, fixable, words in the message)
    "unrelated_class_defines_kl": ("class Other:\n    def kl(self, p, q):\n        return (p @ W).sum()\n\n\n", "", False, True, None),
    "unrelated_class_sets_k": ("class Other:\n    def __init__(self):\n        self.k = nn.Parameter(torch.ones(()))\n\n\n", "", True, True, None),
    "subclass_overrides_other_method": ("class Sub(Trainer):\n    def step(self):\n        super().step()\n\n\n", "", True, True, None),
    "mixin_sets_k": (
        "class Learned:\n    def __init__(self):\n        super().__init__()\n        self.k = nn.Parameter(torch.tensor(2.0))\n\n\n"
        "class Sub(Learned, Trainer):\n    pass\n\n\n",
        "",
        True,
        False,
        "`self.k = ...` in `Learned`, which `Sub` derives from along with `Trainer`",
    ),
    "subclass_with_outside_base": (
        "class Sub(Trainer, nn.Module):\n    pass\n\n\n", "", False, False, "`nn.Module`, a base of `Sub`"
    ),
    "subclass_setattr_hook": (
        "class Sub(Trainer):\n    def __setattr__(self, name, value):\n        object.__setattr__(self, name, value)\n\n\n",
        "",
        True,
        False,
        "`Sub.__setattr__`",
    ),
    "type_of_instance_patched": ("", "type(trainer).kl = lambda self, p, q: (p @ W).sum()\n", False, False, "(`type(trainer).kl = ...`)"),
    "setattr_any_name": ("", "for name in ['k']:\n    setattr(trainer, name, W.sum())\n", True, False, "`setattr(trainer, name, ...)`"),
    "setattr_on_self_in_class": ("", "", True, False, "`setattr(self, key, ...)`"),
    # (since stop 25 the first reason is the `__dict__` read itself: a global or attribute bound
    # without a binding statement, `exprs.dynamic_global`)
    "instance_dict": ("", "trainer.__dict__['kl'] = lambda p, q: (p @ W).sum()\n", False, False, "may be rebound by `trainer.__dict__` (line 29)"),
    "deleted_on_instance": ("", "del trainer.k\n", True, False, "`del trainer.k`"),
}


@pytest.mark.parametrize("name", list(BOUND_ELSEWHERE))
def test_method_or_attribute_bound_elsewhere(name):
    before, after, reads_k, fixable, words = BOUND_ELSEWHERE[name]
    src = TRAINER.replace("trainer = Trainer()\n", before + "trainer = Trainer()\n" + after).replace(
        "import torch.nn.functional as F\n", "import torch.nn.functional as F\n\nW = nn.Parameter(torch.randn(3, 3))\n"
    )
    if reads_k:
        src = src.replace(KL_BODY, READS_K)
    if name == "setattr_on_self_in_class":
        src = src.replace("        self.y = torch.randn(4, 3)\n", "        self.y = torch.randn(4, 3)\n        for key, value in {}.items():\n            setattr(self, key, value)\n")
    result = _lint(src, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", fixable)], [f.message for f in result.findings]
    if words is not None:
        assert words in result.findings[0].message
        assert "line " in result.findings[0].message
    _safe_fix_is_exact(src, ["GF001"])


def test_base_class_def_comes_after_the_class_own_def():
    # `Base.kl` can never win over `Trainer.kl` (C3 puts a class before its bases): still safe.
    src = TRAINER.replace(
        "class Trainer:", "class Base:\n    def kl(self, p, q):\n        raise NotImplementedError\n\n\nclass Trainer(Base):"
    )
    result = _lint(src, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", True)]
    assert _safe_fix_is_exact(src, ["GF001"])


def test_base_class_assigning_on_self_is_unsafe():
    # An instance attribute set in a base's `__init__` wins over any class body.
    src = TRAINER.replace(
        "class Trainer:",
        "class Base:\n    def __init__(self):\n        self.kl = lambda p, q: (p * 3.0).sum()\n\n\nclass Trainer(Base):",
    )
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`self.kl = ...` in `Base`, a base of `Trainer`" in result.findings[0].message


def test_gf004_inlined_helper_bound_elsewhere_names_the_binding():
    src = METHOD_HELPER.replace("trainer = Trainer()\n", "Trainer.assoc = lambda self, p, q: torch.sum(p * q.detach())\ntrainer = Trainer()\n")
    result = _lint(src, ["GF004"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF004", False), ("GF004", False)]
    line = src.splitlines().index("Trainer.assoc = lambda self, p, q: torch.sum(p * q.detach())") + 1
    assert f"inlined from `self.assoc`, but `self.assoc` is also bound at line {line} (`Trainer.assoc = ...`)" in result.findings[0].message
    _safe_fix_is_exact(src, ["GF004"])


def test_gf004_inlined_helper_with_unrelated_override_stays_safe():
    src = METHOD_HELPER.replace(
        "trainer = Trainer()\n", "class Other:\n    def assoc(self, p, q):\n        return (p * q).sum()\n\n\ntrainer = Trainer()\n"
    )
    result = _lint(src, ["GF004"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF004", True), ("GF004", True)]
    assert _safe_fix_is_exact(src, ["GF004"])
