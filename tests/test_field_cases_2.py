"""Second field test: more shapes of real training code that gradfix gets wrong (strict xfails) or right.

Same conventions as `tests/test_field_cases.py` (whose helpers are reused):
each xfail is a minimal reproduction that asserts the correct behaviour, so it
starts passing (and the strict xfail turns into a failure to remove) once the
bug is fixed. Executed checks run original and rewrite through
`gradfix.harness` and compare every value and gradient: a fix offered as safe
must be exact (and must not turn a working step into one that raises).
"""

from __future__ import annotations

import textwrap

import pytest

from tests.test_field_cases import HEAD, _lint, _safe_fix_is_exact, _src

# A callee that does not save its second operand for backward, so an in-place
# change of that operand between the passes changes gradients silently instead
# of tripping autograd's version counter.
DIST = 'dist = lambda u, v: ((u - v) ** 2).mean()\n\n\n'


def _dsrc(body: str) -> str:
    return HEAD + DIST + textwrap.dedent(body)


def _no_safe_fix(src: str, codes) -> None:
    result = _lint(src, codes)
    assert result.findings, "expected the pattern to be reported"
    assert not any(f.fixable for f in result.findings), [f.message for f in result.findings]


# ---------------------------------------------------------------------------
# 1. In-place calls spelled with a keyword (`inplace=True`, `out=`) are not
#    seen as in-place: `F.relu(y, inplace=True)`, `F.hardtanh(..., inplace=True)`
#    and `torch.clamp(y, ..., out=y)` are allowlisted pure functions, so they
#    count as harmless between the passes (GF001), between the two terms'
#    statements (GF002, GF004), and between two backward calls (GF003). The
#    trailing-underscore spelling (`y.relu_()`) is correctly a barrier.

INPLACE_KW_GF001 = _dsrc(
    """
    def step():
        x, y = a * 2, b * 3
        l1 = dist(x.detach(), y)
        l1.backward(retain_graph=True)
        F.relu(y, inplace=True)
        l2 = -dist(x, y.detach())
        l2.backward()
    """
)

OUT_KW_GF001 = _dsrc(
    """
    def step():
        x, y = a * 2, b * 3
        l1 = dist(x.detach(), y)
        l1.backward(retain_graph=True)
        with torch.no_grad():
            torch.clamp(y, -0.5, 0.5, out=y)
        l2 = -dist(x, y.detach())
        l2.backward()
    """
)

INPLACE_KW_GF002 = _dsrc(
    """
    def step():
        x, y = a * 2, b * 3
        q = dist(x, y.detach())
        F.relu(x, inplace=True)
        e = dist(x.detach(), y)
        loss = q + 0.25 * e
        loss.backward()
    """
)

INPLACE_KW_GF004 = _dsrc(
    """
    def step():
        x, y = a * 2, b * 3
        s = dist(x, y.detach())
        F.hardtanh(x, -0.5, 0.5, inplace=True)
        p = dist(x.detach(), y)
        loss1 = 1.0 - s
        loss2 = 2.0 + p
        loss1.backward(retain_graph=True)
        loss2.backward()
    """
)

# GF003: the original runs (relu_ bumps `out`'s version after `rec`'s backward);
# the merged backward raises "modified by an inplace operation" on `rec`'s graph.
INPLACE_KW_GF003 = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

net = nn.Linear(3, 3)
inp = torch.randn(8, 3)


def step():
    out = net(inp)
    rec = out.pow(2).mean()
    rec.backward(retain_graph=True)
    reg = F.relu(out, inplace=True).mean()
    reg.backward()
"""

INPLACE_KW_CASES = [
    (INPLACE_KW_GF001, ["GF001"]),
    (OUT_KW_GF001, ["GF001"]),
    (INPLACE_KW_GF002, ["GF002"]),
    (INPLACE_KW_GF004, ["GF004"]),
    (INPLACE_KW_GF003, ["GF003"]),
]
INPLACE_KW_IDS = ["gf001_inplace_true", "gf001_out_kwarg", "gf002_inplace_true", "gf004_inplace_true", "gf003_inplace_true"]


@pytest.mark.parametrize("src, codes", INPLACE_KW_CASES, ids=INPLACE_KW_IDS)
def test_inplace_keyword_between_passes_executed(src, codes):
    _safe_fix_is_exact(src, codes)


@pytest.mark.parametrize("src, codes", INPLACE_KW_CASES, ids=INPLACE_KW_IDS)
def test_inplace_keyword_between_passes_gets_no_safe_fix(src, codes):
    result = _lint(src, codes)
    assert not any(f.fixable for f in result.findings)


def test_inplace_method_between_passes_is_a_barrier():
    # The underscore spelling of the same mutation is (correctly) a barrier: nothing reported.
    src = INPLACE_KW_GF001.replace("F.relu(y, inplace=True)", "y.relu_()")
    assert "y.relu_()" in src
    assert _lint(src, ["GF001"], fix=False).findings == []


# ---------------------------------------------------------------------------
# 2. A callee whose body calls a function with `inplace=True` on an operand is
#    proven "pure": the two evaluations each mutate the operand (the second
#    through `y.detach()`, which shares storage), the one evaluation only once.
#    (`v += 1` or `v[...] = ...` in the body is correctly unsafe.)

CALLEE_INPLACE_KW = HEAD + textwrap.dedent(
    """
    def dist(u, v):
        v = F.leaky_relu(v, 0.2, inplace=True)
        return ((u - v) ** 2).mean()


    def step():
        x, y = a * 2, b * 3
        l1 = dist(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -dist(x, y.detach())
        l2.backward()
    """
)


def test_callee_with_inplace_keyword_is_unsafe():
    _no_safe_fix(CALLEE_INPLACE_KW, ["GF001"])


def test_callee_with_inplace_keyword_executed():
    _safe_fix_is_exact(CALLEE_INPLACE_KW, ["GF001"])


# ---------------------------------------------------------------------------
# 3. Aliases are not followed: a store through a view of an operand
#    (`yv = y.view(-1)`; `yv[:] = 0`) or through another name for the
#    operand's container (`cache = feats`; `cache["x"] = ...`) between the
#    passes changes what the second pass reads, but only stores into the
#    operand's own path count. GF001 and GF004 give safe fixes with wrong
#    gradients.

VIEW_STORE_GF001 = _dsrc(
    """
    def step():
        x, y = a * 2, b * 3
        yv = y.view(-1)
        l1 = dist(x.detach(), y)
        l1.backward(retain_graph=True)
        yv[:] = 0.0
        l2 = -dist(x, y.detach())
        l2.backward()
    """
)

VIEW_STORE_GF004 = _dsrc(
    """
    def step():
        x, y = a * 2, b * 3
        xv = x.view(-1)
        s = dist(x, y.detach())
        xv[:4] = 0.0
        p = dist(x.detach(), y)
        loss1 = 1.0 - s
        loss2 = 2.0 + p
        loss1.backward(retain_graph=True)
        loss2.backward()
    """
)

DICT_ALIAS_GF001 = _dsrc(
    """
    def step():
        feats = {"x": a * 2, "y": b * 3}
        cache = feats
        l1 = dist(feats["x"].detach(), feats["y"])
        l1.backward(retain_graph=True)
        cache["x"] = a * 5
        l2 = -dist(feats["x"], feats["y"].detach())
        l2.backward()
    """
)

LIST_ALIAS_GF004 = _dsrc(
    """
    def step():
        xs, y = [a * 2], b * 3
        buf = xs
        s = dist(xs[0], y.detach())
        buf[0] = a * 5
        p = dist(xs[0].detach(), y)
        loss1 = 1.0 - s
        loss2 = 2.0 + p
        loss1.backward(retain_graph=True)
        loss2.backward()
    """
)

ALIAS_CASES = [
    (VIEW_STORE_GF001, ["GF001"]),
    (VIEW_STORE_GF004, ["GF004"]),
    (DICT_ALIAS_GF001, ["GF001"]),
    (LIST_ALIAS_GF004, ["GF004"]),
]
ALIAS_IDS = ["gf001_view_store", "gf004_view_store", "gf001_dict_alias_store", "gf004_list_alias_store"]


@pytest.mark.parametrize("src, codes", ALIAS_CASES, ids=ALIAS_IDS)
def test_store_through_alias_between_passes_executed(src, codes):
    _safe_fix_is_exact(src, codes)


@pytest.mark.parametrize("src, codes", ALIAS_CASES, ids=ALIAS_IDS)
def test_store_through_alias_between_passes_gets_no_safe_fix(src, codes):
    result = _lint(src, codes)
    assert not any(f.fixable for f in result.findings)


# ---------------------------------------------------------------------------
# 4. Gradient hooks make the merge non-linear: a hook runs once per backward
#    on that backward's gradient, so `clamp(g1) + clamp(g2)` (two backwards)
#    becomes `clamp(g1 + g2)` (one). Per-parameter clipping hooks
#    (`p.register_hook(lambda g: g.clamp(-c, c))`, a well-known recipe) on a
#    module upstream of both losses give wrong gradients after GF003's and
#    GF001's safe fixes; a hook recording gradients sees one call instead of
#    two. Nothing in gradfix looks at `register_hook` /
#    `register_*_hook`; a file that registers hooks cannot get a safe merge.

CLAMP_HOOK_GF003 = """\
import torch
import torch.nn as nn

net = nn.Linear(3, 3)
for p in net.parameters():
    p.register_hook(lambda g: g.clamp(-0.1, 0.1))
inp = torch.randn(8, 3)


def step():
    out = net(inp)
    rec = out.pow(2).mean()
    reg = out.abs().mean()
    rec.backward(retain_graph=True)
    reg.backward()
"""

CLAMP_HOOK_GF001 = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

encoder = nn.Linear(3, 6)
head_x = nn.Linear(6, 4)
head_y = nn.Linear(6, 4)
for p in encoder.parameters():
    p.register_hook(lambda g: g.clamp(-0.05, 0.05))
batch = torch.randn(8, 3)


def step():
    h = encoder(batch)
    x = head_x(h)
    y = head_y(h)
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -0.5 * F.mse_loss(x, y.detach())
    l2.backward()
"""

RECORD_HOOK_GF003 = """\
import torch
import torch.nn as nn

net = nn.Linear(3, 3)
inp = torch.randn(8, 3)
grads = []


def step():
    out = net(inp)
    out.register_hook(lambda g: grads.append(g.norm()))
    rec = out.pow(2).mean()
    reg = out.abs().mean()
    rec.backward(retain_graph=True)
    reg.backward()
"""

HOOK_CASES = [(CLAMP_HOOK_GF003, ["GF003"]), (CLAMP_HOOK_GF001, ["GF001"]), (RECORD_HOOK_GF003, ["GF003"])]
HOOK_IDS = ["gf003_param_clamp_hook", "gf001_encoder_clamp_hook", "gf003_recording_hook"]


@pytest.mark.parametrize("src, codes", HOOK_CASES, ids=HOOK_IDS)
def test_gradient_hooks_executed(src, codes):
    _safe_fix_is_exact(src, codes)


@pytest.mark.parametrize("src, codes", HOOK_CASES, ids=HOOK_IDS)
def test_gradient_hooks_get_no_safe_fix(src, codes):
    _no_safe_fix(src, codes)


# ---------------------------------------------------------------------------
# 5. GF004 scales the free operand by the ratio of the two terms'
#    coefficients, written symbolically (`grad_scale(prior[i], -1 / k)`). With
#    `k = 0.0` (an ablation switching the term off; a name bound once to a
#    number, which gradfix accepts as a coefficient) the rewrite raises
#    ZeroDivisionError where the original ran. GF001 and GF002 put the
#    coefficient in the numerator and are fine with 0.

ZERO_COEF_GF004 = """\
import torch
import torch.nn as nn

torch.manual_seed(0)


def kl(p, q):
    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()


net_s = nn.Linear(4, 4)
net_p = nn.Linear(4, 4)
inp = torch.randn(3, 2, 4)
k = 0.0


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


def test_gf004_zero_coefficient_executed():
    _safe_fix_is_exact(ZERO_COEF_GF004, ["GF004"])


def test_gf004_nonzero_coefficient_executed():
    # The same step with k = 3.0 is fixed and exact (locks in that the xfail above is about 0 only).
    src = ZERO_COEF_GF004.replace("k = 0.0", "k = 3.0")
    assert [f.fixable for f in _lint(src, ["GF004"]).findings] == [True]
    _safe_fix_is_exact(src, ["GF004"])


# ---------------------------------------------------------------------------
# 6. GF001 rebuilds the second loss as a detached value (`l2 = -l1.detach()`)
#    and keeps it safe even when `l2` is later read as a tensor through its
#    graph (GF004 makes such a fix unsafe: "A name that carries the terms and
#    is read elsewhere as a tensor ... makes the fix unsafe"). A later
#    `(0.1 * l2 ** 2).backward()` silently loses its gradient;
#    `torch.autograd.grad(l2, x)` raises.

L2_REUSED_GF001 = _src(
    """
    def step():
        x, y = a * 2, b * 3
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -F.mse_loss(x, y.detach())
        l2.backward(retain_graph=True)
        extra = 0.1 * l2 ** 2
        extra.backward()
    """
)

L2_AUTOGRAD_GF001 = _src(
    """
    def step():
        x, y = a * 2, b * 3
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -F.mse_loss(x, y.detach())
        l2.backward(retain_graph=True)
        g = torch.autograd.grad(l2, x)[0]
        a.data -= 0.1 * g.mean()
    """
)

L2_CASES = [L2_REUSED_GF001, L2_AUTOGRAD_GF001]
L2_IDS = ["later_backward_of_l2", "autograd_grad_of_l2"]


@pytest.mark.parametrize("src", L2_CASES, ids=L2_IDS)
def test_gf001_loss_read_later_as_tensor_executed(src):
    _safe_fix_is_exact(src, ["GF001", "GF003"])


@pytest.mark.parametrize("src", L2_CASES, ids=L2_IDS)
def test_gf001_loss_read_later_as_tensor_is_unsafe(src):
    result = _lint(src, ["GF001"])
    assert not any(f.fixable for f in result.findings)


# ---------------------------------------------------------------------------
# Near misses of GF004's one-loss-through-a-loop form that must stay silent
# (locked in): the pairing of the two accumulators' terms breaks inside the loop.

_LOOP_HEAD = """\
import torch
import torch.nn as nn

torch.manual_seed(0)


def kl(p, q):
    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()


net_s = nn.Linear(4, 4)
net_p = nn.Linear(4, 4)
inp = torch.randn(3, 2, 4)
k = 3.0


def step():
    series = [torch.softmax(net_s(inp[i]), -1) for i in range(3)]
    prior = [torch.softmax(net_p(inp[i]), -1) for i in range(3)]
    s_loss, p_loss = 0.0, 0.0
"""
_LOOP_TAIL = """\
    loss = p_loss - k * s_loss
    loss.backward()
"""

LOOP_NEAR_MISSES = {
    "accumulator_reset_in_loop": """\
    for i in range(len(series)):
        if i == 1:
            s_loss = 0.0
        s_loss += kl(series[i], prior[i].detach())
        p_loss += kl(series[i].detach(), prior[i])
""",
    "break_on_accumulator": """\
    for i in range(len(series)):
        s_loss += kl(series[i], prior[i].detach())
        if s_loss > 0.0:
            break
        p_loss += kl(series[i].detach(), prior[i])
""",
    "weight_changes_in_loop": """\
    w = 1.0
    for i in range(len(series)):
        s_loss += w * kl(series[i], prior[i].detach())
        p_loss += kl(series[i].detach(), prior[i])
        w = w * 0.5
""",
    "accumulator_rescaled_in_loop": """\
    for i in range(len(series)):
        s_loss += kl(series[i], prior[i].detach())
        p_loss += kl(series[i].detach(), prior[i])
        s_loss = s_loss * 0.5
""",
    "accumulators_swapped_in_loop": """\
    for i in range(len(series)):
        s_loss += kl(series[i], prior[i].detach())
        p_loss += kl(series[i].detach(), prior[i])
        s_loss, p_loss = p_loss, s_loss
""",
    "index_rebound_between_terms": """\
    for i in range(len(series)):
        s_loss += kl(series[i], prior[i].detach())
        i = (i + 1) % 3
        p_loss += kl(series[i].detach(), prior[i])
""",
    "for_else_rescales": """\
    for i in range(len(series)):
        s_loss += kl(series[i], prior[i].detach())
        p_loss += kl(series[i].detach(), prior[i])
    else:
        s_loss = s_loss * 2
""",
}


@pytest.mark.parametrize("name", list(LOOP_NEAR_MISSES))
def test_gf004_loop_near_miss_silent(name):
    src = _LOOP_HEAD + LOOP_NEAR_MISSES[name] + _LOOP_TAIL
    result = _lint(src, ["GF004"], fix=False)
    assert result.findings == []


def test_gf004_loop_base_case_found():
    # The same loop without the disturbance is found (so the near misses above can fail).
    src = _LOOP_HEAD + LOOP_NEAR_MISSES["for_else_rescales"].replace("    else:\n        s_loss = s_loss * 2\n", "") + _LOOP_TAIL
    result = _lint(src, ["GF004"])
    assert [f.fixable for f in result.findings] == [True]
    _safe_fix_is_exact(src, ["GF004"])
