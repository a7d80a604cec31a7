"""A catalogue of parts of realistic training steps, and a Hypothesis strategy assembling them.

Every generated `Step` is a complete snippet in the harness's protocol
(module-level setup, then `def step():`) holding one instance of a gradfix
pattern (`FORMS`: GF001 named/inline/same name, GF002 inline/named terms (the second maybe
bound in both branches of an `if`/`else`),
GF003 losses computed first or between, GF004 straight-line or through
accumulation loops in several styles, two backward calls, one backward of the
sum, or one loss), built from:

- a callee (`CALLEES`): torch.nn.functional losses, a non-symmetric KL, loss
  modules, lambdas (pure, reading a dict, with a tensor default), module-level
  functions of one or several statements (pure, in-place on a local,
  augmented assignments on a fresh value or on an argument, a hook registered
  inside, no_grad inside, data-dependent branches; with side effects on a
  global, random, reading a trainable global or taking one as a default,
  decorated, rebound after their `def`), `nn.Sequential` critics
  (deterministic, with Dropout, with BatchNorm in train or eval mode, with a
  counting forward hook or a clamping parameter hook, rebound, or mutated after
  construction by `append` / `__setitem__`), custom `torch.autograd.Function`s
  (linear backward, clamp, sign, affine, leaky, normalised, abs, squared
  gradient, `None` for one input, counting or stateful backward),
  `functools.partial`; drawn from `PROVABLE_CALLEES` half of the time;
- operands (`OPERANDS`): leaves, names, one tensor on both sides, computed
  expressions, names with aliases (another name, a list, a dict, an object's
  attribute, a view), views (expression or named), slices, list items, dict
  values, attributes of a module-level object, `self` attributes, loop items;
  either operand detached first;
- coefficients: literals, a module constant, a learned tensor, a dict item, an
  object's attribute, `self.k`, and a name `k` rebound by one of `BIND_FORMS`
  (assignment, augmented, tuple/star targets, `for`, walrus, walrus in a
  comprehension, `with ... as`, `except ... as`, import, `match` captures,
  `del`, `def`, `class`, a global setter, `globals()`, `setattr` on the
  module, `exec`) at module level, at the start of the step, between the
  passes or after them, with or without `global`;
- statements between the passes (`BETWEEN`: logging, metrics, in-place writes
  to an operand or through an alias in many spellings, `.data` and
  `.detach()` writes, container rebinding, gradient and forward hooks, `with`
  blocks, custom context managers, `match`, decorators, imports, classes with a
  base whose `__init_subclass__` has side effects, optimizer step/zero_grad,
  gradient reads and writes, other backward passes, `autograd.grad`, module
  mode and parameter changes, coefficient and callee-global rebinding), `with`
  blocks around the second evaluation (`WRAPS`), and statements after the
  passes (`AFTER`: logging, optimizer step, a later backward through the
  retained graph, returning or storing a loss);
- nesting: a function, a method of a trainer object, module-level script code, or a loop
  (`loop_module`: at module level; `loop_closure`: in a
  function nested in `step`, reading what `step` built as variables of the enclosing one; operands
  built inside or before it);
- lines: one statement per line, or runs of simple statements joined by `;` (`lines=joined`).

The strategy records every choice in `Step.parts`, so a failure names the
parts involved and a part can be switched off (`steps(exclude=...)`).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Tuple

from hypothesis import strategies as st

# --------------------------------------------------------------------------- the result


@dataclass
class Step:
    source: str
    codes: List[str]
    parts: Dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.parts.items())

    def numbered(self) -> str:
        return "\n".join(f"{i:3}| {line}" for i, line in enumerate(self.source.splitlines(), 1))


# --------------------------------------------------------------------------- callees
#
# Each callee: setup lines (module level) and a call template over two operand
# expressions {A}, {B}. `module` callees are nn.Modules built in the file.

_AUTOGRAD_FN = """\
class Dist(torch.autograd.Function):
    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return ((u - v) ** 2).sum()

    @staticmethod
    def backward(ctx, g):
        u, v = ctx.saved_tensors
        d = 2.0 * (u - v)
        return {grad_u}, {grad_v}
"""

CALLEES: Dict[str, Tuple[str, str]] = {
    # name: (setup, call template)
    "F.mse_loss": ("", "F.mse_loss({A}, {B})"),
    "F.l1_loss": ("", "F.l1_loss({A}, {B})"),
    "F.smooth_l1_loss": ("", "F.smooth_l1_loss({A}, {B}, beta=0.5)"),
    "F.mse_loss_sum": ("", 'F.mse_loss({A}, {B}, reduction="sum")'),
    "F.kl_div": ("", 'F.kl_div(F.log_softmax({A}, -1), F.softmax({B}, -1), reduction="batchmean")'),
    "nn.MSELoss": ("crit = nn.MSELoss()\n", "crit({A}, {B})"),
    "nn.L1Loss_sum": ('crit = nn.L1Loss(reduction="sum")\n', "crit({A}, {B})"),
    "lambda": ("dist = lambda u, v: ((u - v) ** 2).mean()\n", "dist({A}, {B})"),
    "lambda_asym": ("dist = lambda u, v: (u * torch.tanh(v)).sum()\n", "dist({A}, {B})"),
    "def_one": ("def dist(u, v):\n    return torch.mean(torch.abs(u - v))\n", "dist({A}, {B})"),
    "def_kl": (
        "def dist(p, q):\n    return torch.sum(p.softmax(-1) * (p.log_softmax(-1) - q.log_softmax(-1)))\n",
        "dist({A}, {B})",
    ),
    "def_multi": ("def dist(u, v):\n    d = u - v\n    e = d * d\n    return e.mean()\n", "dist({A}, {B})"),
    "def_inplace_local": (
        "def dist(u, v):\n    d = u - v\n    d.mul_(0.5)\n    return (d * d).sum()\n",
        "dist({A}, {B})",
    ),
    "def_inplace_global": (
        "TALLY = torch.zeros(())\n\n\ndef dist(u, v):\n    TALLY.add_(1.0)\n    return F.mse_loss(u, v)\n",
        "dist({A}, {B})",
    ),
    "def_append_global": (
        "CALLS = []\n\n\ndef dist(u, v):\n    CALLS.append(1)\n    return F.mse_loss(u, v)\n",
        "dist({A}, {B})",
    ),
    "def_random": ("def dist(u, v):\n    return F.mse_loss(F.dropout(u, 0.5), v)\n", "dist({A}, {B})"),
    "def_randn": ("def dist(u, v):\n    return ((u - v + 0.1 * torch.randn(3)) ** 2).mean()\n", "dist({A}, {B})"),
    "def_trainable_global": (
        "W = torch.randn(3, 3, requires_grad=True)\n\n\ndef dist(u, v):\n    return ((u - v) @ W).pow(2).mean()\n",
        "dist({A}, {B})",
    ),
    "def_trainable_default": (
        "W = torch.randn(3, 3, requires_grad=True)\n\n\ndef dist(u, v, w=W):\n    return ((u - v) @ w).pow(2).mean()\n",
        "dist({A}, {B})",
    ),
    # A pure tensor method on a receiver holding the operands (`merge._receiver_form`).
    "receiver_pow": ("", "({A} - {B}).pow(2).mean()"),
    "receiver_abs_sum": ("", "({A} * {B}).abs().sum(dim=-1).mean()"),
    # Symmetric by construction (`callees.symmetric_definition`): may be paired with swapped arguments.
    "def_symmetric": ("def dist(u, v):\n    return (u * v.tanh()).sum() + (v * u.tanh()).sum()\n", "dist({A}, {B})"),
    "def_symmetric_weighted": ("def dist(u, v):\n    return (u * v.tanh()).sum() + 2.0 * (v * u.tanh()).sum()\n", "dist({A}, {B})"),
    # A module-level constant tensor (`analysis/constants.py`), and ways of making one trainable.
    "def_constant_global": (
        "W = torch.randn(3, 3) / 3\n\n\ndef dist(u, v):\n    return ((u - v) @ W.t()).pow(2).mean()\n",
        "dist({A}, {B})",
    ),
    "def_constant_made_trainable": (
        "W = torch.randn(3, 3) / 3\nW.requires_grad_()\n\n\ndef dist(u, v):\n    return ((u - v) @ W).pow(2).mean()\n",
        "dist({A}, {B})",
    ),
    "def_constant_view_updated": (
        "W = torch.randn(3, 3) / 3\nW.t()[0].add_(w)\n\n\ndef dist(u, v):\n    return ((u - v) @ W).pow(2).mean()\n",
        "dist({A}, {B})",
    ),
    "def_constant_as_tensor": (
        "W = torch.as_tensor(a[:3] * 0.5)\n\n\ndef dist(u, v):\n    return ((u - v) @ W).pow(2).mean()\n",
        "dist({A}, {B})",
    ),
    "partial": ("dist = functools.partial(F.smooth_l1_loss, beta=0.5)\n", "dist({A}, {B})"),
    "def_rebound_random": (
        "def dist(u, v):\n    return F.mse_loss(u, v)\n\n\ndist = lambda u, v: F.mse_loss(F.dropout(u, 0.5), v)\n",
        "dist({A}, {B})",
    ),
    "def_rebound_counting": (
        "CALLS = []\n\n\ndef dist(u, v):\n    return F.mse_loss(u, v)\n\n\n"
        "def _counting(u, v):\n    CALLS.append(1)\n    return F.mse_loss(u, v)\n\n\ndist = _counting\n",
        "dist({A}, {B})",
    ),
    "def_decorated_counting": (
        "CALLS = []\n\n\ndef counted(fn):\n    @functools.wraps(fn)\n    def wrapper(*args):\n"
        "        CALLS.append(1)\n        return fn(*args)\n    return wrapper\n\n\n"
        "@counted\ndef dist(u, v):\n    return F.mse_loss(u, v)\n",
        "dist({A}, {B})",
    ),
    "def_enable_grad": ("@torch.enable_grad()\ndef dist(u, v):\n    return F.mse_loss(u, v)\n", "dist({A}, {B})"),
    "seq_forward_hook_counting": (
        "CALLS = []\ncrit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))\n"
        "crit.register_forward_hook(lambda m, i, o: CALLS.append(1))\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq_param_clamp_hook": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))\n"
        "crit[0].weight.register_hook(lambda g: g.clamp(-0.01, 0.01))\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq_eval_batchnorm": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.LeakyReLU(0.2), nn.Linear(4, 1)).eval()\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq_rebound_dropout": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))\n"
        "crit = nn.Sequential(nn.Linear(6, 4), nn.Dropout(0.5), nn.Linear(4, 1))\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq_setitem_dropout": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))\ncrit[1] = nn.Dropout(0.5)\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq_append_dropout": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))\ncrit.append(nn.Dropout(0.5))\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq_dropout": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Dropout(0.5), nn.Linear(4, 1))\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "seq_batchnorm": (
        "crit = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.LeakyReLU(0.2), nn.Linear(4, 1))\n",
        "crit(torch.cat([{A}, {B}], -1)).mean()",
    ),
    "autograd_linear": (_AUTOGRAD_FN.format(grad_u="g * d", grad_v="-g * d"), "Dist.apply({A}, {B})"),
    "autograd_clamp": (
        _AUTOGRAD_FN.format(grad_u="g.clamp(min=0.0) * d", grad_v="-g.clamp(min=0.0) * d"),
        "Dist.apply({A}, {B})",
    ),
    "autograd_affine": (_AUTOGRAD_FN.format(grad_u="g * d + 1e-3", grad_v="-g * d"), "Dist.apply({A}, {B})"),
    "autograd_leaky": (
        _AUTOGRAD_FN.format(grad_u="torch.where(g > 0, g, 0.1 * g) * d", grad_v="-g * d"), "Dist.apply({A}, {B})"
    ),
    "autograd_normalised": (_AUTOGRAD_FN.format(grad_u="g / g.abs().clamp(min=1e-3) * d", grad_v="-g * d"), "Dist.apply({A}, {B})"),
    "autograd_abs": (_AUTOGRAD_FN.format(grad_u="g.abs() * d", grad_v="-g.abs() * d"), "Dist.apply({A}, {B})"),
    "autograd_square": (_AUTOGRAD_FN.format(grad_u="g * g * d", grad_v="-g * d"), "Dist.apply({A}, {B})"),
    "autograd_mul_method": (_AUTOGRAD_FN.format(grad_u="d.mul(g)", grad_v="torch.mul(g, -d)"), "Dist.apply({A}, {B})"),
    "autograd_none_grad": (_AUTOGRAD_FN.format(grad_u="g * d", grad_v="None"), "Dist.apply({A}, {B})"),
    "autograd_counting": (
        "CALLS = []\n\n\n" + _AUTOGRAD_FN.format(grad_u="g * d", grad_v="-g * d").replace(
            "        u, v = ctx.saved_tensors\n", "        u, v = ctx.saved_tensors\n        CALLS.append(1)\n"
        ),
        "Dist.apply({A}, {B})",
    ),
    "autograd_max_state": (
        "PEAK = [0.0]\n\n\n" + _AUTOGRAD_FN.format(grad_u="g * d", grad_v="-g * d").replace(
            "        u, v = ctx.saved_tensors\n", "        u, v = ctx.saved_tensors\n        PEAK[0] = max(PEAK[0], float(g))\n"
        ),
        "Dist.apply({A}, {B})",
    ),
    "def_hook_clamp_inside": (
        "def dist(u, v):\n    d = u - v\n    if d.requires_grad:\n        d.register_hook(lambda g: g.clamp(-0.01, 0.01))\n"
        "    return (d * d).sum()\n",
        "dist({A}, {B})",
    ),
    "def_aug_fresh": ("def dist(u, v):\n    d = u * 1.0\n    d -= v\n    return (d * d).mean()\n", "dist({A}, {B})"),
    "def_aug_clone": ("def dist(u, v):\n    d = u.clone()\n    d -= v\n    return (d * d).mean()\n", "dist({A}, {B})"),
    "def_aug_arg": ("def dist(u, v):\n    d = u\n    d -= v\n    return (d * d).mean()\n", "dist({A}, {B})"),
    "def_no_grad_scale": (
        "def dist(u, v):\n    with torch.no_grad():\n        s = (u - v).abs().max() + 1.0\n    return F.mse_loss(u / s, v / s)\n",
        "dist({A}, {B})",
    ),
    "def_branch": (
        "def dist(u, v):\n    if (u - v).sum().item() > 0:\n        return F.mse_loss(u, v)\n    return F.l1_loss(u, v)\n",
        "dist({A}, {B})",
    ),
    "def_reads_cfg": ('def dist(u, v):\n    return CFG["w"] * F.mse_loss(u, v)\n', "dist({A}, {B})"),
    "def_reads_scale": ("def dist(u, v):\n    return SCALE * F.mse_loss(u, v)\n", "dist({A}, {B})"),
    "lambda_reads_cfg": ('dist = lambda u, v: CFG["w"] * F.l1_loss(u, v)\n', "dist({A}, {B})"),
    "lambda_default_tensor": ("dist = lambda u, v, s=w: s * F.l1_loss(u, v)\n", "dist({A}, {B})"),
    "autograd_sign": (_AUTOGRAD_FN.format(grad_u="torch.sign(g) * d", grad_v="-torch.sign(g) * d"), "Dist.apply({A}, {B})"),
}
# Callees gradfix can prove pure and deterministic: drawn more often, so that many steps keep a safe fix.
PROVABLE_CALLEES = [
    "F.mse_loss", "F.l1_loss", "F.smooth_l1_loss", "F.mse_loss_sum", "F.kl_div", "nn.MSELoss", "nn.L1Loss_sum",
    "lambda", "lambda_asym", "def_one", "def_kl", "def_multi", "def_inplace_local", "def_aug_fresh", "def_aug_clone",
    "seq", "autograd_linear", "autograd_mul_method", "def_symmetric", "def_constant_global", "receiver_pow",
]
MODULE_CALLEES = {k for k in CALLEES if k.startswith("seq") or k.startswith("nn.")}
SEQ_CALLEES = {k for k in CALLEES if k.startswith("seq")}
NAMED_CALLEES = {k for k, (setup, call) in CALLEES.items() if call.startswith("dist(")}

# --------------------------------------------------------------------------- operands


@dataclass
class Operands:
    X: str  # the first operand's expression
    Y: str
    prelude: List[str]  # step statements building them
    handles: List[str]  # expressions naming X's tensor (for in-place writes), X's own first
    rebind: Optional[str] = None  # a statement rebinding X's container slot
    leaf: bool = False  # X is the leaf `a` itself
    loop: bool = False  # X, Y are `xs[i]`, `ys[i]` inside a loop over range(2)


FORWARDS_X = ["a * 2.0", "a + 0.5", "a * 2.0", "torch.sin(a)"]
FORWARDS_Y = ["b * 1.5", "b - 0.5", "b * 1.5", "torch.cos(b)"]
OPERANDS = ["leaf", "name", "same", "expr", "name_alias", "view_expr", "slice_expr", "view_named", "list", "dict", "attr", "self"]


def make_operands(kind: str, fx: str, fy: str, method: bool) -> Operands:
    if kind == "leaf":
        return Operands("a", "b", [], ["a"], leaf=True)
    if kind == "name":
        return Operands("x", "y", [f"x = {fx}", f"y = {fy}"], ["x"], rebind="x = x * 3.0")
    if kind == "same":
        return Operands("x", "x", [f"x = {fx}"], ["x"], rebind="x = x * 3.0")
    if kind == "expr":
        return Operands("(x * 2.0)", "torch.tanh(y)", [f"x = {fx}", f"y = {fy}"], ["x"], rebind="x = x * 3.0")
    if kind == "name_alias":
        return Operands(
            "x", "y", [f"x = {fx}", f"y = {fy}", "xa = x", "hold = [x]", 'stash = {"x": x}', "box.x = x"],
            ["x", "xa", "hold[0]", 'stash["x"]', "box.x", "x.view(-1)", "x[:]"], rebind="x = x * 3.0",
        )
    if kind == "view_expr":
        return Operands("x.view(-1, 3)", "y.view(-1, 3)", [f"x = {fx}", f"y = {fy}"], ["x.view(-1, 3)", "x"])
    if kind == "slice_expr":
        return Operands("x[1:]", "y[1:]", [f"x = {fx}", f"y = {fy}"], ["x[1:]", "x"])
    if kind == "view_named":
        return Operands(
            "xv", "yv", [f"x = {fx}", f"y = {fy}", "xv = x.view(-1, 3)", "yv = y[:]"], ["xv", "x"], rebind="xv = x * 3.0"
        )
    if kind == "list":
        return Operands(
            "xs[-1]", "ys[-1]", [f"x = {fx}", f"y = {fy}", "xs = [a + 0.25, x]", "ys = [b + 0.25, y]"],
            ["xs[-1]", "x"], rebind="xs[-1] = xs[-1] * 3.0",
        )
    if kind == "dict":
        return Operands(
            'feats["a"]', 'feats["b"]', [f'feats["a"] = {fx}', f'feats["b"] = {fy}', 'x = feats["a"]'],
            ['feats["a"]', "x"], rebind='feats["a"] = feats["a"] * 3.0',
        )
    if kind == "attr":
        return Operands("box.x", "box.y", [f"box.x = {fx}", f"box.y = {fy}", "x = box.x"], ["box.x", "x"], rebind="box.x = box.x * 3.0")
    if kind == "self":
        assert method
        return Operands("self.x", "self.y", [f"self.x = {fx}", f"self.y = {fy}", "x = self.x"], ["self.x", "x"], rebind="self.x = self.x * 3.0")
    raise ValueError(kind)


def loop_operands(fx: str, fy: str) -> Operands:
    return Operands(
        "xs[i]", "ys[i]", [f"xs = [{fx}, a + 0.25]", f"ys = [{fy}, b + 0.25]", "x = xs[0]"], ["xs[i]", "x"],
        rebind="xs[i] = xs[i] * 3.0", loop=True,
    )


# --------------------------------------------------------------------------- coefficients

COEF_LITERALS = ["", "-", "2.0 * ", "0.5 * ", "-0.5 * ", "-1 * ", "3 * "]
COEFS = ["literal", "const", "rebound", "learned", "self_attr"]

# Statements binding `k` to a new value (or unbinding it), in every binding form.
BIND_FORMS: Dict[str, str] = {
    "assign": "k = 2.0",
    "aug": "k *= 4.0",
    "tuple": "k, _t = 2.0, 0",
    "star": "*_s, k = [1.0, 2.0]",
    "for": "for k in (1.0, 2.0):\n    pass",
    "walrus": "(k := 2.0)",
    "walrus_comp": "_c = [(k := v) for v in (1.0, 2.0)]",
    "with": "with contextlib.nullcontext(2.0) as k:\n    pass",
    "except": "try:\n    raise ValueError(2.0)\nexcept ValueError as k:\n    pass",
    "import": "from math import e as k",
    "match": "match 2.0:\n    case k:\n        pass",
    "match_seq": "match [2.0]:\n    case [k]:\n        pass",
    "del": "del k",
    "global_fn": "set_k()",
    "globals_dict": 'globals()["k"] = 2.0',
    "module_setattr": 'setattr(sys.modules[__name__], "k", 2.0)',
    "exec": 'exec("k = 2.0", globals())',
    "def": "def k():\n    return 2.0",
    "class": "class k:\n    pass",
}
BIND_POSITIONS = ["setup", "start", "between", "after"]
UNBINDING = {"except", "del", "def", "class"}  # leave `k` unbound or not a number

# --------------------------------------------------------------------------- statements between the passes
#
# Templates with {first} (the first computed loss or term), {X}, {h} (another
# handle on X's tensor), {rebind} (rebinding X's slot), {leafx} ('a').

BETWEEN: Dict[str, str] = {
    "print": "print({first}.item())",
    "metrics": 'metrics["first"] = {first}.item()',
    "log_append": "log.append(float({first}))",
    "fstring": 'print(f"loss {{{first}:.3f}}")',
    "inplace_operand": "{X}.add_(0.25)",
    "inplace_handle": "{h}.mul_(1.5)",
    "augassign_handle": "{h} += 0.25",
    "setitem_handle": "{h}[0] = 0.0",
    "data_write": "{h}.data.mul_(1.5)",
    "detach_write": "{h}.detach().mul_(1.5)",
    "copy_": "{h}.copy_({h} * 1.5)",
    "out_kw": "with torch.no_grad():\n    torch.mul({h}, 1.5, out={h})",
    "leaf_nograd": "with torch.no_grad():\n    {leafx}.mul_(0.9)",
    "rebind_slot": "{rebind}",
    "grad_hook": "{h}.register_hook(lambda g: g * 2.0)",
    "leaf_grad_hook": "{leafx}.register_hook(lambda g: g * 2.0)",
    "forward_hook": "_fh = {module}.register_forward_hook(lambda m, i, o: o * 2.0)",
    "no_grad_block": "with torch.no_grad():\n    _tmp = {X} * 2.0",
    "custom_cm_harmless": "with quiet():\n    _tmp = {first}.item()",
    "custom_cm_poke": "with poked():\n    pass",
    "match_inplace": 'match mode:\n    case "train":\n        {h}.add_(0.25)\n    case _:\n        pass',
    "match_harmless": 'match mode:\n    case "train":\n        metrics["m"] = 1.0\n    case _:\n        pass',
    "decorator_harmless": "@functools.lru_cache(maxsize=None)\ndef _cached(n):\n    return n",
    "decorator_poke": "@poking\ndef _cb():\n    pass",
    "import_harmless": "import math",
    "import_callee": "from torch.nn.functional import l1_loss as dist",
    "class_harmless": "class _Local(object):\n    pass",
    "class_poke": "class _Local(PokeBase):\n    pass",
    "class_body_write": "class _Local:\n    {h}.mul_(1.5)",
    "tensor_method_inplace": "torch.Tensor.mul_({h}, 1.5)",
    "dunder_inplace": "{h}.__imul__(1.5)",
    "dunder_setitem": "{h}.__setitem__(0, 0.0)",
    "clamp_": "{h}.clamp_(min=-0.1)",
    "torch_fn_inplace": "torch.relu_({h})",
    "relu_inplace_kw": "F.relu({h}, inplace=True)",
    "index_fill_": "{h}.index_fill_(0, torch.tensor([0]), 0.0)",
    "init_constant": "with torch.no_grad():\n    nn.init.constant_({h}, 0.5)",
    "setattr_rebind": 'setattr(box, "x", box.x * 3.0) if hasattr(box, "x") else None',
    "module_param_write": "with torch.no_grad():\n    crit[0].weight.mul_(1.5)",
    "module_eval": "crit.eval()",
    "module_train": "crit.train()",
    "self_k_rebind": "self.k = 2.0",
    "box_k_rebind": "box.k = 2.0",
    "cfg_write": 'CFG["w"] = 2.0',
    "cfg_update": 'CFG.update(w=2.0)',
    "scale_rebind": "SCALE = 2.0",
    "grad_loop_scale": "for t in (a, b):\n    if t.grad is not None:\n        t.grad.mul_(0.5)",
    "grad_comp_zero": "[t.grad.zero_() for t in (a, b) if t.grad is not None]",
    "foreach_mul": "torch._foreach_mul_([t.grad for t in (a, b) if t.grad is not None], 0.5)",
    "clip_grad_value": "torch.nn.utils.clip_grad_value_([a, b], 0.01)",
    "clip_grad_norm_metric": 'metrics["gn"] = float(torch.nn.utils.clip_grad_norm_([a, b], 1e9))',
    "deepcopy_leaf": "box.snap = copy.deepcopy(b)",
    "count_grads": 'metrics["n"] = sum(p.grad is not None for p in opt.param_groups[0]["params"])',
    "param_grads_none": "for p_ in crit.parameters():\n    p_.grad = None",
    "module_zero_grad": "crit.zero_grad()",
    "other_backward": "(c ** 2).sum().backward()",
    "backward_through_x": "({X} ** 2).sum().backward(retain_graph=True)",
    "autograd_grad": 'metrics["ag"] = torch.autograd.grad(({X} ** 2).sum(), a, retain_graph=True, allow_unused=True)[0] is None',
    "opt_step": "opt.step()",
    "opt_zero_grad": "opt.zero_grad()",
    "grad_read": 'metrics["g"] = None if {leafx}.grad is None else {leafx}.grad.sum().item()',
    "grad_write": "{leafx}.grad = None",
    "poke_call": "poke()",
    "requires_grad_off": "b.requires_grad_(False)",
    "rng": "_noise = torch.randn(3)",
    "derived": "_z = {X} * 2.0 + 1.0",
    "del_first": "del {first}",
    "lambda_def": "_f = lambda t: t * 2.0",
    "listcomp": "_vals = [v.item() for v in ({first},)]",
    "assert": "assert {first}.item() == {first}.item()",
}
AFTER: Dict[str, str] = {
    "none": "",
    "log_second": 'metrics["second"] = {second}.item()',
    "log_both": "log.append(({first}.item(), {second}.item()))",
    # An in-place update of one name after the pattern: a rebuilt value sharing the one evaluation's
    # memory with another name would change that one too (`build.detached(copy=True)`).
    "aug_first": "{first} += 0.25\nlog.append(({first}.item(), {second}.item()))",
    "opt_step": "opt.step()\nopt.zero_grad()",
    "reuse_first": "{first}.backward()",
    "reuse_first_sum": "({first} * 0.5).backward()",
    "return_first": "return {first}",
    "store_first": "box.kept = {first}",
    # A later backward through the first loss's graph, spelled as code of the file (a helper, a
    # closure handed to the optimizer): a merge that frees that graph is not exact.
    "helper_backward": "extra_backward({first})",
    "closure_backward": "opt.step(lambda: ({first} * 0.5).backward())",
    # The first loss's name bound anew, then read as a tensor: the read sees the new value (no
    # reason), unless the rebinding may not run.
    "rebind_store": "{first} = (c * 0.5).sum()\nbox.kept = {first}",
    "rebind_if_store": "if c.sum() > 1e9:\n    {first} = (c * 0.5).sum()\nbox.kept = {first}",
    # A later backward on a loss built afresh (no later-backward reason), and ones that reach back
    # to the first loss (the reason stays): directly, or through an in-place update.
    "fresh_backward": "_zf = torch.randn(4, 3)\n_fresh = (_zf * c).pow(2).sum()\n_fresh.backward()",
    "fresh_plus_first": "_fresh = (torch.randn(4, 3) * c).sum() + {first}\n_fresh.backward()",
    "fresh_inplace_first": "_fresh = (torch.randn(4, 3) * c).sum()\n_fresh += {first}\n_fresh.backward()",
}

# How GF002's sum is written ({} are the two scaled terms).
SUMS = {
    "plain": "loss = {} + {}",
    "scaled_total": "loss = ({} + {}) * 0.5",
    "neg_neg": "loss = {} - -({})",
    "nested": "loss = 0.5 * ({} + 2.0 * ({}))",
    "two_statements": "loss = {}\nloss = loss + {}",
    "aug": "loss = {}\nloss += {}",
}
# What the last backward of GF003/GF004's run backpropagates ({} is the loss name).
LAST = {"plain": "{}", "scaled": "(2 * {})", "sum": "{}.sum()", "mean": "{}.mean()", "right_scaled": "({} * 3)"}

# `with` blocks around the second evaluation (GF001 named, GF002 named, GF004 straight-line forms).
WRAPS = {
    "none": "",
    "autocast_bf16": 'with torch.autocast("cpu", dtype=torch.bfloat16)',
    "autocast_off": 'with torch.autocast("cpu", enabled=False)',
    "enable_grad": "with torch.enable_grad()",
    "custom_cm": "with quiet()",
    "poked_cm": "with poked()",
    "inference_off": "with torch.inference_mode(False)",
}

# Between statements whose templates need a name for the first loss/term.
NEEDS_FIRST = {"print", "metrics", "log_append", "fstring", "custom_cm_harmless", "del_first", "listcomp", "assert"}
NEEDS_REBIND = {"rebind_slot"}
NEEDS_MODULE = {"forward_hook", "module_eval", "module_train"}
NEEDS_SEQ = {"module_param_write", "param_grads_none", "module_zero_grad"}
NEEDS_METHOD = {"self_k_rebind"}
LEAF_INPLACE = {"inplace_operand", "inplace_handle", "augassign_handle", "setitem_handle", "copy_", "match_inplace",
                "class_body_write", "tensor_method_inplace", "dunder_inplace", "dunder_setitem", "clamp_",
                "torch_fn_inplace", "relu_inplace_kw", "index_fill_"}


_BACKWARD_STATEMENT = re.compile(r"^(\s*)([A-Za-z_][\w.]*)\.backward\((.*)\)$", re.MULTILINE)


def _respell(statement: str, call: str) -> str:
    """`loss.backward(kw)` statements (a name's, whole lines) as `call(loss, kw)`; the rest unchanged."""
    return _BACKWARD_STATEMENT.sub(lambda m: f"{m.group(1)}{call}({m.group(2)}{', ' + m.group(3) if m.group(3) else ''})", statement)


def _indent(text: str, pad: str) -> List[str]:
    return [pad + line if line else "" for line in text.splitlines()]


# --------------------------------------------------------------------------- setup pieces

HEAD = """\
import contextlib
import copy
import functools
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
c = torch.randn(4, 3, requires_grad=True)
metrics = {}
log = []
feats = {}
mode = "train"
K = 0.5
SCALE = 1.0
CFG = {"w": 1.0}
w = torch.tensor(0.7, requires_grad=True)


class Box:
    pass


box = Box()
box.k = 0.5
opt = torch.optim.SGD([a, b, c], lr=0.1)


@contextlib.contextmanager
def quiet():
    yield


def poke():
    with torch.no_grad():
        a.mul_(0.9)
    if "a" in feats:
        feats["a"] = feats["a"] * 3.0
    if hasattr(box, "x"):
        box.x = box.x * 3.0


@contextlib.contextmanager
def poked():
    poke()
    yield


def poking(fn):
    poke()
    return fn


def set_k():
    global k
    k = 2.0


def extra_backward(t):
    (t * 0.25).sum().backward()


class PokeBase:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        poke()
"""


# --------------------------------------------------------------------------- the strategy

FORMS = {
    "GF001": ["named", "inline", "same_name"],
    "GF002": ["inline", "named"],
    "GF003": ["computed_first", "computed_between"],
    "GF004": ["straight", "loop", "loop_sum", "loop_one_loss", "straight_sum", "helper"],
}
# GF005 (a needless retain) rides along: where a step's last backward retains the graph and
# nothing after it backpropagates, its fix is executed with the others.
ALL_CODES = ["GF001", "GF002", "GF003", "GF004", "GF005"]
CODE_SETS = {
    "GF001": [["GF001"], ["GF001", "GF003", "GF004"], ALL_CODES],
    "GF002": [["GF002"], ALL_CODES],
    "GF003": [["GF003"], ["GF003", "GF005"], ["GF001", "GF003", "GF004"]],
    "GF004": [["GF004"], ["GF001", "GF003", "GF004"], ALL_CODES],
    "GF005": [["GF005"], ALL_CODES],
}

# Parts drawn more often: the clean instance, so that many steps get a safe fix.
HARMLESS_BETWEEN = ["print", "metrics", "log_append", "derived", "no_grad_block", "custom_cm_harmless",
                    "match_harmless", "import_harmless", "class_harmless", "decorator_harmless", "fstring"]


@st.composite
def steps(draw, exclude: FrozenSet[str] = frozenset()) -> Step:
    """One training step; `exclude` holds part values ('callee=seq', 'between=grad_hook', ...) not to draw."""

    def pick(key: str, options, prefer=None):
        """One of `options` not excluded; half of the time one of `prefer` (parts likely to keep a safe fix)."""
        allowed = [o for o in options if f"{key}={o}" not in exclude]
        preferred = [o for o in allowed if prefer and o in prefer]
        value = draw(st.sampled_from(preferred if preferred and draw(st.booleans()) else allowed))
        parts[key] = str(value)
        return value

    parts: Dict[str, str] = {}
    code = pick("rule", ["GF001", "GF002", "GF003", "GF004", "GF005"])
    if code == "GF005":
        from .retain import retain_step

        codes = draw(st.sampled_from(CODE_SETS[code]))
        parts["codes"] = ",".join(codes)
        return Step(_joined(draw, pick, retain_step(pick, HEAD)), codes, parts)
    form = pick("form", FORMS[code])
    codes = draw(st.sampled_from(CODE_SETS[code]))
    parts["codes"] = ",".join(codes)
    nesting = pick("nesting", ["function", "function", "method", "loop_outer", "loop_inner", "loop_closure", "module", "loop_module"])
    method = nesting == "method"
    callee = pick("callee", list(CALLEES), prefer=PROVABLE_CALLEES)
    fx, fy = draw(st.sampled_from(FORWARDS_X)), draw(st.sampled_from(FORWARDS_Y))
    loop = form.startswith("loop")
    if loop:
        ops = loop_operands(fx, fy)
        parts["operands"] = "loop_list"
    else:
        kinds = [o for o in OPERANDS if o != "self" or method]
        ops = make_operands(pick("operands", kinds), fx, fy, method)
    swap = pick("swap", [False, False, False, True]) if code in ("GF001", "GF002", "GF004") else False

    # Coefficients of the two terms.
    coef_kinds = []
    coefs = []
    rebind = None
    for i in range(2):
        kind = pick(
            f"coef{i + 1}",
            ["literal", "const", "rebound", "learned", "cfg", "box_attr", "compound", "compound_learned"]
            + (["self_attr"] if method else []),
            prefer=["literal", "const"],
        )
        coef_kinds.append(kind)
        if kind == "literal":
            coefs.append(draw(st.sampled_from(COEF_LITERALS)))
        elif kind == "const":
            coefs.append("K * ")
        elif kind == "learned":
            coefs.append("w * ")
        elif kind == "self_attr":
            coefs.append("self.k * ")
        elif kind == "cfg":
            coefs.append('CFG["w"] * ')
        elif kind == "box_attr":
            coefs.append("box.k * ")
        elif kind == "compound":  # a sum of a number and a module constant (`linear.parse_coef`)
            coefs.append("(1 - K) * ")
        elif kind == "compound_learned":  # ... and of a trainable tensor: not a number
            coefs.append("(K + w) * ")
        else:
            coefs.append("k * ")
    if "rebound" in coef_kinds:
        form_ = pick("bind_form", list(BIND_FORMS))
        # `k` bound to a function or class before its use only makes the original raise.
        positions = BIND_POSITIONS if form_ not in UNBINDING else ["between", "after"]
        rebind = (form_, pick("bind_pos", positions), pick("bind_global", [False, True]))

    n_between = draw(st.sampled_from([0, 0, 1, 1, 2]))
    between: List[str] = []
    for _ in range(n_between):
        if draw(st.booleans()):
            choice = draw(st.sampled_from([b for b in HARMLESS_BETWEEN if f"between={b}" not in exclude]))
        else:
            choice = draw(st.sampled_from([b for b in BETWEEN if f"between={b}" not in exclude]))
        if choice in NEEDS_REBIND and ops.rebind is None:
            continue
        if choice in NEEDS_MODULE and callee not in MODULE_CALLEES:
            continue
        if choice in NEEDS_SEQ and callee not in SEQ_CALLEES:
            continue
        if choice in NEEDS_METHOD and not method:
            continue
        between.append(choice)
    parts["between"] = "+".join(between) or "none"
    after = pick("after", list(AFTER), prefer=["none", "log_second", "log_both", "opt_step"])
    handle = draw(st.sampled_from(ops.handles))
    retain2 = draw(st.booleans())

    # ------------------------------------------------------------ module setup
    setup_lines = [HEAD]
    csetup, ctemplate = CALLEES[callee]
    if csetup:
        setup_lines.append(csetup)
    setup_lines.append("k = 0.5")
    if rebind and rebind[1] == "setup":
        setup_lines.append(BIND_FORMS[rebind[0]])

    def call(A: str, B: str) -> str:
        return ctemplate.format(A=A, B=B)

    stop = pick("stop", ["method", "function", "data"], prefer=["method"])

    def det(v: str) -> str:
        """`v` stop-gradiented, spelled `v.detach()`, `torch.detach(v)` or the legacy `v.data`."""
        if stop == "data":
            return f"({v}).data" if not v.isidentifier() and not v.replace(".", "").replace("_", "").isalnum() else f"{v}.data"
        return f"torch.detach({v})" if stop == "function" else f"{v}.detach()"

    X, Y = ops.X, ops.Y
    if pick("flip", [False, True]):  # the first pass detaches the other operand
        X, Y = Y, X

    # ------------------------------------------------------------ the pattern
    body: List[str] = []
    if "scale_rebind" in between:
        body.append("global SCALE")
    local_k = rebind is not None and rebind[1] != "setup" and not rebind[2]
    if rebind is not None and rebind[1] != "setup" and rebind[2]:
        body.append("global k")
    elif local_k:
        body.append("k = 0.5")
    if rebind is not None and rebind[1] == "start":
        body.append(BIND_FORMS[rebind[0]])
    loop_from = len(body)
    body.extend(ops.prelude)
    if nesting in ("loop_outer", "loop_closure", "loop_module"):
        loop_from = len(body)

    names = {"first": None, "second": None}

    def between_lines(first: Optional[str]) -> List[str]:
        out = []
        if rebind is not None and rebind[1] == "between":
            out.append(BIND_FORMS[rebind[0]])
        for choice in between:
            if choice in NEEDS_FIRST and first is None:
                continue
            module = "crit"
            text = BETWEEN[choice].format(
                first=first, X=X, h=handle, rebind=ops.rebind, leafx="a", module=module
            )
            if ops.leaf and choice in LEAF_INPLACE:
                text = "with torch.no_grad():\n" + textwrap.indent(text, "    ")
            out.append(text)
        return out

    c1, c2 = coefs
    sum_style = pick("sum_style", list(SUMS), prefer=["plain"]) if code == "GF002" else "plain"
    last = pick("last", list(LAST), prefer=["plain"]) if code in ("GF003", "GF004") else "plain"
    wrap2 = pick("wrap2", list(WRAPS), prefer=["none"])

    def second(stmt: str) -> str:
        """The second evaluation's statement, inside the drawn `with` block."""
        return stmt if wrap2 == "none" else f"{WRAPS[wrap2]}:\n" + textwrap.indent(stmt, "    ")
    # term with X live / Y detached, and X detached / Y live; `swap` swaps the second's argument order
    t_xlive = call(X, det(Y))
    t_ylive = call(Y, det(X)) if swap else call(det(X), Y)
    if code == "GF001":
        e1, e2 = f"{c1}{t_ylive}", f"{c2}{t_xlive}"
        r2 = "retain_graph=True" if retain2 else ""
        if form == "inline":
            body.append(f"({e1}).backward(retain_graph=True)")
            body.extend(between_lines(None))
            body.append(f"({e2}).backward({r2})")
        else:
            l1, l2 = ("loss", "loss") if form == "same_name" else ("l1", "l2")
            body.append(f"{l1} = {e1}")
            body.append(f"{l1}.backward(retain_graph=True)")
            body.extend(between_lines(l1))
            body.append(second(f"{l2} = {e2}"))
            body.append(f"{l2}.backward({r2})")
            names = {"first": l1, "second": l2}
    elif code == "GF002":
        tail = draw(st.sampled_from(["", " + (c ** 2).mean()"]))
        if form == "inline":
            body.extend(between_lines(None))
            body.append(SUMS[sum_style].format(f"{c1}{t_xlive}", f"{c2}{t_ylive}") + tail)
            names = {"first": None, "second": "loss"}
        else:
            body.append(f"q = {t_xlive}")
            # The second term's name bound in both branches of an `if`/`else`, each with its own
            # coefficient; the branch taken drawn, and what is drawn between before the `if` or in
            # the taken branch before its evaluation.
            branch = pick("branch", ["none", "if_true", "if_false", "in_branch"], prefer=["none"])
            if branch == "none":
                body.extend(between_lines("q"))
                body.append(second(f"e = {t_ylive}"))
            else:
                other = draw(st.sampled_from(COEF_LITERALS))
                inside = between_lines("q") if branch == "in_branch" else []
                if branch != "in_branch":
                    body.extend(between_lines("q"))
                taken = [*inside, second(f"e = {t_ylive}")]
                untaken = [second(f"e = {other}{t_ylive}")]
                test = "K < 0.25" if branch == "if_false" else "K > 0.25"
                then, orelse = (untaken, taken) if branch == "if_false" else (taken, untaken)
                body.append(f"if {test}:\n" + textwrap.indent("\n".join(then), "    ")
                            + "\nelse:\n" + textwrap.indent("\n".join(orelse), "    "))
            after_defs = pick("after_defs", ["none", "ste_rebind", "inplace"], prefer=["none"])
            if after_defs != "none" and ops.rebind is not None:
                # After both definitions: the straight-through estimator rebinds an operand (the
                # terms read the old value), or an operand is changed in place.
                rebind_x = ops.rebind.split(" = ")[0]
                body.append(f"{rebind_x} = {rebind_x} + ({rebind_x} * 0.5).detach()" if after_defs == "ste_rebind"
                            else f"with torch.no_grad():\n    {rebind_x}.mul_(1.5)")
            # The second term through names of its own (`w = 0.5 * e`, then the sum of `w`), maybe logged.
            link = pick("link", ["none", "one", "two", "logged", "tensor_read"], prefer=["none"])
            summed = "e"
            if link != "none":
                body.append("w = 0.5 * e")
                summed = "w"
                if link == "two":
                    body.append("w2 = -w / 4")
                    summed = "w2"
                elif link == "logged":
                    body.append("log.append(w.item())")
                elif link == "tensor_read":
                    body.append("log.append(w * 1.0)")
            body.append(SUMS[sum_style].format(f"{c1}q", f"{c2}{summed}") + tail)
            names = {"first": "q", "second": "e"}
        body.append("loss.backward()")
    elif code == "GF003":
        r2 = "retain_graph=True" if retain2 else ""
        e1 = f"{c1}{call(X, Y)}"
        e2 = f"{c2}{t_xlive}"
        if form == "computed_first":
            body += [f"l1 = {e1}", f"l2 = {e2}", "l1.backward(retain_graph=True)"]
            body.extend(between_lines("l1"))
            body.append(f"{LAST[last].format('l2')}.backward({r2})")
        else:
            body += [f"l1 = {e1}", "l1.backward(retain_graph=True)"]
            body.extend(between_lines("l1"))
            body += [f"l2 = {e2}", f"{LAST[last].format('l2')}.backward({r2})"]
        names = {"first": "l1", "second": "l2"}
    else:  # GF004
        mid_between = draw(st.booleans())
        if loop:
            style = pick("loop_style", ["index_aug", "zip", "enumerate", "list_mean", "plus_assign", "zeros_init",
                                        "reset_first", "reset_mid", "reset_one", "comp_sum", "comp_gen", "comp_stack",
                                        "comp_parts", "comp_zip", "comp_enum", "two_loops", "two_loops_inner",
                                        "two_loops_other_range", "nested", "nested_outer_between"],
                         prefer=["index_aug"])
            header = {
                "zip": "for u, v in zip(xs, ys):",
                "enumerate": "for i, (u, v) in enumerate(zip(xs, ys)):",
            }.get(style, "for i in range(len(xs)):")
            sx, sy = t_xlive, t_ylive
            zipped = style in ("zip", "enumerate", "comp_zip", "comp_enum")
            if zipped:
                sx, sy = (t.replace("xs[i]", "u").replace("ys[i]", "v") for t in (sx, sy))
            init = {"list_mean": ["ss = []", "ps = []"], "zeros_init": ["s = torch.zeros(())", "p = torch.zeros(())"]}
            if not style.startswith("comp_"):
                body += init.get(style, ["s = 0.0", "p = 0.0"]) + [header]
            if style == "list_mean":
                acc_s, acc_p = f"    ss.append({sx})", f"    ps.append({sy})"
            elif style == "plus_assign":
                acc_s, acc_p = f"    s = s + {sx}", f"    p = p + {sy}"
            else:
                acc_s, acc_p = f"    s += {sx}", f"    p += {sy}"
            lines = []
            if mid_between:
                lines = "\n".join(between_lines("s" if style != "list_mean" else None)).splitlines()
                if zipped:
                    lines = [line.replace("xs[i]", "u") for line in lines]
            if style.startswith("comp_"):
                # Reduced comprehensions of one clause (GF004 fuses them).
                # Over `zip(xs, ys)` too (fused where `xs`, `ys` are proven lists).
                clause = {
                    "comp_zip": "for u, v in zip(xs, ys)",
                    "comp_enum": "for i, (u, v) in enumerate(zip(xs, ys))",
                }.get(style, "for i in range(len(xs))")
                reduce = {
                    "comp_zip": "sum({e} " + clause + ")",
                    "comp_enum": "torch.stack([{e} " + clause + "]).mean()",
                    "comp_sum": "sum([{e} " + clause + "])",
                    "comp_gen": "sum({e} " + clause + ")",
                    "comp_stack": "torch.stack([{e} " + clause + "]).mean()",
                    # an element of several parts: its term is indexed by the fix (`shared[i]`)
                    "comp_parts": "sum([0.5 * {e} + (c ** 2).mean() " + clause + "])",
                }[style]
                body.append("s = " + reduce.format(e=sx))
                body.extend(lines)
                body.append("p = " + reduce.format(e=sy))
            elif style.startswith("reset_"):
                # `if i == 0: s = ... else: s += ...` (GF004 follows it as the `else` branch; the
                # fix changes both); reset at the second iteration, or `p` never reset (not followed).
                test = "i == 1" if style == "reset_mid" else "i == 0"
                reset_p = f"        p += {sy}" if style == "reset_one" else f"        p = {sy}"
                branch = lambda first, second: [first] + ["        " + x if x else "" for x in lines] + [second]
                body += [f"    if {test}:"] + branch(f"        s = {sx}", reset_p)
                body += ["    else:"] + branch(f"        s += {sx}", f"        p += {sy}")
            elif style.startswith("nested"):
                # The sums in a loop nested in the loop (followed as part of its body): what is drawn
                # between the evaluations runs in the inner body, or in the outer body after it.
                body.append("    for j in range(2):")
                body.append("    " + acc_s)
                inner_lines = lines if style == "nested" else []
                body.extend("        " + line if line else "" for line in inner_lines)
                body.append("    " + acc_p)
                if style == "nested_outer_between":
                    body.extend("    " + line if line else "" for line in lines)
            elif style.startswith("two_loops"):
                # The two sums in two loops (GF004 fuses loops over one `range(N)`): what is drawn
                # between the evaluations runs between the loops, or at the end of the first loop's
                # body; the other range is not fused.
                body.append(acc_s)
                if style == "two_loops_inner":
                    body.extend("    " + line if line else "" for line in lines)
                else:
                    body.extend(lines)
                body.append("for i in range(len(ys)):" if style == "two_loops_other_range" else header)
                body.append(acc_p)
            else:
                body.append(acc_s)
                body.extend("    " + line if line else "" for line in lines)
                body.append(acc_p)
            if style == "list_mean":
                body += ["s = torch.stack(ss).mean()", "p = torch.stack(ps).mean()"]
        elif form == "helper":
            # the `.detach()` hidden in small helpers of the file, which GF004 inlines
            helper_style = pick("helper_style", ["single", "let", "nested"], prefer=["single"])
            if helper_style == "single":
                setup_lines.append(
                    f"\n\ndef hs(u, v):\n    return {call('u', det('v'))}\n\n\ndef hp(u, v):\n    return {call(det('u'), 'v')}\n"
                )
            elif helper_style == "let":
                # locals read once, then the return (GF004 inlines them as their values)
                setup_lines.append(
                    f"\n\ndef hs(u, v):\n    a = u\n    b = {det('v')}\n    return {call('a', 'b')}\n"
                    f"\n\ndef hp(u, v):\n    a = {det('u')}\n    b = v\n    return {call('a', 'b')}\n"
                )
            else:
                # two levels: each helper hands its operands and its own weight to one that weighs the
                # callee by it under a mean (the Anomaly Transformer's min_loss/max_loss/loss_function)
                setup_lines.append(
                    f"\n\ndef weighed(u, v, w):\n    return torch.mean(w * {call('u', 'v')})\n"
                    f"\n\ndef hs(u, v):\n    b = {det('v')}\n    w = 1.5\n    return weighed(u, b, w)\n"
                    f"\n\ndef hp(u, v):\n    a = {det('u')}\n    return weighed(a, v, -0.5)\n"
                )
            body.append(f"s = hs({X}, {Y})")
            if mid_between:
                body.extend(between_lines("s"))
            body.append(second(f"p = hp({X}, {Y})"))
        else:
            body.append(f"s = {t_xlive}")
            if mid_between:
                body.extend(between_lines("s"))
            body.append(second(f"p = {t_ylive}"))
        body.append("rec = (c ** 2).mean()")
        if form == "loop_one_loss":
            body.append(f"loss = {c1}s + {c2}p + rec")
            body.append("loss.backward()")
            names = {"first": "s", "second": "loss"}
        else:
            body.append(f"loss1 = {c1}s + rec")
            body.append(f"loss2 = {c2}p + rec")
            if form.endswith("_sum"):
                if not mid_between:
                    body.extend(between_lines("loss1"))
                body.append("(loss1 + loss2).backward()")
            else:
                body.append("loss1.backward(retain_graph=True)")
                if not mid_between:
                    body.extend(between_lines("loss1"))
                body.append(f"{LAST[last].format('loss2')}.backward({'retain_graph=True' if retain2 else ''})")
            names = {"first": "loss1", "second": "loss2"}
    if rebind is not None and rebind[1] == "after":
        body.append(BIND_FORMS[rebind[0]])
    if after != "none" and names["first"] and names["second"]:
        if after == "store_first" and method:
            pass
        body.append(AFTER[after].format(first=names["first"], second=names["second"]))
    elif after == "opt_step":
        body.append(AFTER[after])
    else:
        parts["after"] = "none"

    # ------------------------------------------------------------ backward spelling
    # `loss.backward(...)` statements written as `torch.autograd.backward(loss, ...)`, or in a method as
    # Lightning's `self.manual_backward(loss, ...)` (the Trainer stands in for a LightningModule).
    spelling = pick("spelling", ["method", "autograd", "manual"] if method else ["method", "autograd"], prefer=["method"])
    if spelling != "method":
        call = "torch.autograd.backward" if spelling == "autograd" else "self.manual_backward"
        body = [_respell(stmt, call) for stmt in body]

    # ------------------------------------------------------------ where the losses are held
    # GF003's losses as items of a dict the step builds (`losses["l1"].backward(retain_graph=True)`).
    if code == "GF003" and pick("holder", ["name", "dict"], prefer=["name"]) == "dict":
        body = [re.sub(r"\bloss([12])\b", r'losses["l\1"]', stmt) for stmt in body]
        body.insert(loop_from, "losses = {}")

    # ------------------------------------------------------------ nesting
    if nesting.startswith("loop"):
        body[loop_from:] = ["for it in range(2):"] + [textwrap.indent(stmt, "    ") for stmt in body[loop_from:]]
    if nesting == "loop_closure":
        # The loop in a function nested in `step`: what `step` built before it comes in as
        # variables of the enclosing function, which the loop's analysis cannot see the values of.
        body[loop_from:] = ["def inner():"] + [textwrap.indent(stmt, "    ") for stmt in body[loop_from:]] + ["return inner()"]
    out = list(setup_lines)
    if nesting in ("module", "loop_module"):
        # Script code: the pattern at module level, run when the file is executed.
        out += [""]
        for stmt in body:
            out.extend(_indent(stmt, ""))
        return Step(_joined(draw, pick, "\n".join(out) + "\n"), codes, parts)
    if method:
        out += ["", "", "class Trainer:", "    manual_backward = staticmethod(torch.Tensor.backward)", "",
                "    def __init__(self):", "        self.k = 0.5", "", "    def train_step(self):"]
        for stmt in body:
            out.extend(_indent(stmt, "        "))
        out += ["", "", "trainer = Trainer()", "", "", "def step():", "    return trainer.train_step()"]
    else:
        out += ["", "", "def step():"]
        for stmt in body:
            out.extend(_indent(stmt, "    "))
    source = "\n".join(out) + "\n"
    return Step(_joined(draw, pick, source), codes, parts)


def _joined(draw, pick, source: str) -> str:
    """The snippet as written (`lines=one`), or with runs of simple statements of one block joined
    on a line by `;` (`lines=joined`): the same program, each statement where it ran before."""
    if pick("lines", ["one", "one", "joined"]) == "one":
        return source
    import random

    import libcst as cst

    rng = random.Random(draw(st.integers(0, 2**32 - 1)))

    class Join(cst.CSTTransformer):
        def leave_Module(self, original_node, updated_node):
            return updated_node.with_changes(body=self._join(updated_node.body))

        def leave_IndentedBlock(self, original_node, updated_node):
            return updated_node.with_changes(body=self._join(updated_node.body))

        def _join(self, body):
            out = []
            for statement in body:
                previous = out[-1] if out else None
                if (
                    isinstance(statement, cst.SimpleStatementLine)
                    and isinstance(previous, cst.SimpleStatementLine)
                    and not statement.leading_lines
                    and previous.trailing_whitespace.comment is None
                    and rng.random() < 0.6
                ):
                    last = previous.body[-1].with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" ")))
                    out[-1] = previous.with_changes(
                        body=[*previous.body[:-1], last, *statement.body], trailing_whitespace=statement.trailing_whitespace
                    )
                else:
                    out.append(statement)
            return out

    return cst.parse_module(source).visit(Join()).code
