"""Issue 11 items 2, 3 and 6: what stands between the passes is proven harmless from an allowlist,
coefficients are numbers only if no binding form rebinds them, and stores through any alias of an
operand (dict values, attributes, containers) count.

Each case is a minimal reproduction: the finding is still reported (or the pattern is a barrier),
never with a safe fix; where the case is real the unsafe rewrite is executed to show it differs.
Positive controls keep their safe fix and are executed against the original.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

HEADER = '''\
import contextlib
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
box = {}
history = []


def wipe(fn):
    box["x"].mul_(3.0)
    return fn


class Ctx:
    def __enter__(self):
        box["x"].mul_(3.0)

    def __exit__(self, *exc):
        return False


ctx = Ctx()


class Meta(type):
    def __init__(cls, *args):
        if "x" in box:  # not when `Base` itself is created
            box["x"].mul_(3.0)


class Base(metaclass=Meta):
    pass

'''


def _gf001(between: str) -> str:
    body = textwrap.indent(textwrap.dedent(between).strip("\n"), "    ")
    return HEADER + f'''
def step():
    x, y = a * 2, b * 3
    box["x"] = x
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
{body}
    l2 = -F.mse_loss(x, y.detach())
    l2.backward()
'''


def _no_safe_fix(src: str, codes=("GF001",)):
    result = _lint(src, codes)
    assert not any(f.fixable for f in result.findings), [f.message for f in result.findings]
    return result


def _unsafe_rewrite_differs(src: str, codes=("GF001",)) -> None:
    """The unsafe rewrite, executed, does not reproduce the original: the case is real."""
    harness = pytest.importorskip("gradfix.harness")
    result = _lint(src, codes, unsafe=True)
    assert result.fixed is not None
    report = harness.verify_pair(src, result.fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is not None or [r.key for r in report.rows if not r.ok]


# -- item 6: statements that run code the file does not show --------------------------

RUNS_HIDDEN_CODE = {
    "with_custom_context": ("with ctx:\n    pass", "`with ctx:`"),
    "decorator": ("@wipe\ndef hook():\n    pass", "decorator `@wipe`"),
    "class_with_metaclass_base": ("class A(Base):\n    pass", "`class A(...)`"),
}


@pytest.mark.parametrize("case", sorted(RUNS_HIDDEN_CODE))
def test_hidden_code_between_the_passes_makes_the_fix_unsafe(case):
    between, named = RUNS_HIDDEN_CODE[case]
    src = _gf001(between)
    result = _no_safe_fix(src)
    assert len(result.findings) == 1
    assert named in result.findings[0].message
    _unsafe_rewrite_differs(src)


UNKNOWN_SYNTAX = {
    "import": ("import json", "`import json`"),
    "match": ("match history:\n    case []:\n        pass\n    case _:\n        pass", "a `match` statement"),
    "assert": ("assert l1.item() > -1.0", "`assert`"),
    "class_body_call": ("class A:\n    wipe(None)", "`wipe()`"),
}


@pytest.mark.parametrize("case", sorted(UNKNOWN_SYNTAX))
def test_syntax_outside_the_allowlist_makes_the_fix_unsafe(case):
    between, named = UNKNOWN_SYNTAX[case]
    result = _no_safe_fix(_gf001(between))
    assert len(result.findings) == 1
    assert named in result.findings[0].message, result.findings[0].message


def test_match_capture_rebinding_an_operand_is_a_barrier():
    src = _gf001("match b * 5:\n    case x:\n        pass")
    assert _lint(src, ["GF001"]).findings == []


@pytest.mark.parametrize(
    "between, named",
    [
        ("@wipe\ndef hook():\n    pass", "the decorator `@wipe` (line 42)"),
        ("with ctx:\n    pass", "`with ctx:` (its `__enter__`/`__exit__`) (line 42)"),
        ("x0 = 1\nimport json", "`import json` (line 43)"),
        ("class A(Base):\n    pass", "`class A(...)` (line 42)"),
    ],
)
def test_the_reason_names_the_construct_and_its_line(between, named):
    result = _no_safe_fix(_gf001(between))
    assert named in result.findings[0].message, result.findings[0].message


HARMLESS = {
    "no_grad_block": "with torch.no_grad():\n    z = a * 2",
    "nullcontext": "with contextlib.nullcontext():\n    pass",
    "logging": "print(l1.item())\nhistory.append(l1.item())",
    "plain_class": "class Plain:\n    n = 1",
    "function_without_decorator": "def helper(u=1.0):\n    return u",
}


@pytest.mark.parametrize("case", sorted(HARMLESS))
def test_proven_harmless_statements_keep_the_safe_fix(case):
    src = _gf001(HARMLESS[case])
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    _safe_fix_is_exact(src, ["GF001"])


def test_gf003_sees_the_same_policy():
    src = HEADER + '''
def step():
    x = a * 2
    box["x"] = x
    l1 = (x * b).sum()
    l1.backward(retain_graph=True)
    with ctx:
        pass
    l2 = (x * x).sum()
    l2.backward()
'''
    result = _lint(src, ["GF003"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`with ctx:`" in result.findings[0].message


# -- the one harmless-call policy: a pure method of the class in the same statement ---------

PURE_SELF_METHOD_GF002 = '''\
import torch
import torch.nn.functional as F

BETA = 0.25
z_e0 = torch.randn(8, 4, requires_grad=True)
z_q0 = torch.randn(8, 4, requires_grad=True)
x = torch.randn(8, 4)


class Trainer:
    def recon_loss(self, x_hat, x):
        return F.mse_loss(x_hat, x) + 0.1 * F.l1_loss(x_hat, x)

    def train_step(self):
        z_e, z_q = z_e0 * 2, z_q0 * 3
        loss = self.recon_loss(z_e + z_q, x) + F.mse_loss(z_q, z_e.detach()) + BETA * F.mse_loss(z_q.detach(), z_e)
        loss.backward()


trainer = Trainer()


def step():
    trainer.train_step()
'''


def test_gf002_hoisting_past_a_proven_pure_method_is_safe_and_exact():
    result = _lint(PURE_SELF_METHOD_GF002, ["GF002"])
    assert [f.fixable for f in result.findings] == [True]
    _safe_fix_is_exact(PURE_SELF_METHOD_GF002, ["GF002"])


def test_gf002_hoisting_past_a_method_that_updates_state_is_unsafe():
    src = PURE_SELF_METHOD_GF002.replace(
        "    def recon_loss(self, x_hat, x):\n", "    def recon_loss(self, x_hat, x):\n        self.seen = len(x)\n"
    )
    result = _no_safe_fix(src, ["GF002"])
    assert "`self.recon_loss()`" in result.findings[0].message


# -- item 3: a coefficient is a number only if nothing else binds its name -------------------

COEF_HEADER = '''\
import contextlib
import torch
import torch.nn.functional as F

w = 0.5
log_w = torch.zeros(2, requires_grad=True)
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
'''

COEF_STEP = '''

def step():
{rebind}
    x, y = a * 2, b * 3
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -w * F.mse_loss(x, y.detach())
    l2.backward()
'''

# Each form binds `w` (in `step`, or elsewhere in the file) to a learned value or to anything else.
BINDING_FORMS = {
    "tuple_target": ("    w_align, w = log_w.exp()", ""),
    "star_target": ("    *rest, w = log_w.exp()", ""),
    "for_target": ("    for w in log_w.exp()[:1]:\n        pass", ""),
    "walrus": ("    (w := log_w.exp()[1])", ""),
    "with_as": ("    with contextlib.nullcontext(log_w.exp()[1]) as w:\n        pass", ""),
    "match_capture": ("    match log_w.exp()[1]:\n        case w:\n            pass", ""),
    "global_elsewhere": ("    set_w()", "\n\ndef set_w():\n    global w\n    w = log_w.exp()[1]\n"),
    "import_as": ("    pass", "\n\nfrom math import pi as w\n"),
    "except_as": ("    pass", "\n\ntry:\n    pass\nexcept Exception as w:\n    pass\n"),
    "del": ("    pass", "\n\ndef drop():\n    global w\n    del w\n"),
    "globals_dict": ("    globals()['w'] = log_w.exp()[1]", ""),
    "comprehension": ("    pass", "\n\nws = [w for w in range(3)]\n"),
}


@pytest.mark.parametrize("form", sorted(BINDING_FORMS))
def test_a_coefficient_rebound_by_any_binding_form_is_not_a_number(form):
    rebind, extra = BINDING_FORMS[form]
    src = COEF_HEADER + extra + COEF_STEP.format(rebind=rebind)
    result = _no_safe_fix(src)
    assert len(result.findings) == 1
    assert "coefficient `w` is not a number" in result.findings[0].message


@pytest.mark.parametrize("form", ["tuple_target", "walrus", "match_capture", "global_elsewhere"])
def test_the_learned_coefficient_case_is_real(form):
    rebind, extra = BINDING_FORMS[form]
    _unsafe_rewrite_differs(COEF_HEADER + extra + COEF_STEP.format(rebind=rebind))


def test_a_coefficient_bound_once_stays_a_number_and_the_fix_exact():
    src = COEF_HEADER + COEF_STEP.format(rebind="    print(log_w.sum().item())")
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [True]
    _safe_fix_is_exact(src, ["GF001"])


# -- item 2: stores through an alias held in a container or an attribute ---------------------

ALIAS_HEADER = '''\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
mask = torch.tensor([True, False, True, False])


class Holder:
    pass


h = Holder()


def flat(t):
    v = t
    return v.view(-1)


def doubled(t):
    return (t * 2).sum(dim=1)
'''

ALIAS_STEP = '''

def step():
    fs, ft = a * 2, b * 3
{alias}
    l1 = F.mse_loss(fs.detach(), ft)
    l1.backward(retain_graph=True)
{store}
    l2 = -F.mse_loss(fs, ft.detach())
    l2.backward()
'''

ALIAS_STORES = {
    "dict_value": ('    feats = {"src": fs, "tgt": fs}', '    feats["tgt"][mask] = 0.0'),
    "attribute": ("    h.last = fs", "    h.last[mask] = 0.0"),
    "list_append": ("    keep = []\n    keep.append(fs)", "    keep[0][mask] = 0.0"),
    "list_in_place_add": ("    keep = []\n    keep += [fs]", "    keep[-1][mask] = 0.0"),
    "nested_container": ('    feats = {"pair": (fs, ft)}', '    feats["pair"][0][mask] = 0.0'),
    "attribute_of_alias": ("    h.feats = {'s': fs}\n    other = h", "    other.feats['s'][mask] = 0.0"),
    "dict_update": ("    feats = {}\n    feats.update(src=fs)", "    feats['src'][mask] = 0.0"),
    "function_returning_a_view": ("    fv = flat(fs)", "    fv[0] = 0.0"),
}


@pytest.mark.parametrize("case", sorted(ALIAS_STORES))
def test_a_store_through_a_container_or_attribute_alias_is_a_barrier(case):
    alias, store = ALIAS_STORES[case]
    src = ALIAS_HEADER + ALIAS_STEP.format(alias=alias, store=store)
    result = _lint(src, ["GF001"])
    assert not any(f.fixable for f in result.findings), [f.message for f in result.findings]


@pytest.mark.parametrize("case", ["dict_value", "attribute"])
def test_the_alias_store_case_is_real(case):
    # Without the alias the store would not be seen: the rewrite then differs (or raises).
    alias, store = ALIAS_STORES[case]
    src = ALIAS_HEADER + ALIAS_STEP.format(alias=alias, store=store)
    harness = pytest.importorskip("gradfix.harness")
    fixed = src.replace(
        "    l1 = F.mse_loss(fs.detach(), ft)\n    l1.backward(retain_graph=True)\n",
        "    l1_l2 = F.mse_loss(grad_scale(fs, -1.0), ft)\n",
    ).replace("    l2 = -F.mse_loss(fs, ft.detach())\n    l2.backward()\n", "    l1_l2.backward()\n")
    fixed = "from gradfix.autograd import grad_scale\n" + fixed
    report = harness.verify_pair(src, fixed, filename="train.py", device="cpu", repeat=0)
    assert report.error is not None or [r.key for r in report.rows if not r.ok]


@pytest.mark.parametrize(
    "alias, store",
    [
        ('    feats = {"src": fs.clone()}', '    feats["src"][mask] = 0.0'),  # a copy, not an alias
        ("    h.last = fs.sum()", "    h.count = 1"),
        ('    stats = {}', '    stats["l1"] = l1.item()'),
        ("    d = doubled(fs)", "    d[0] = 0.0"),  # the file's function returns a new tensor
    ],
)
def test_stores_into_what_is_not_an_alias_keep_the_safe_fix(alias, store):
    src = ALIAS_HEADER + ALIAS_STEP.format(alias=alias, store=store)
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    _safe_fix_is_exact(src, ["GF001"])


MODULE_CALLEE = '''\
import torch
import torch.nn as nn

D = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
a = torch.randn(5, 3, requires_grad=True)
b = torch.randn(5, 3, requires_grad=True)


def step():
    x, y = a * 2, b * 3
    l1 = D(x.detach() - y).mean()
    l1.backward(retain_graph=True)
    {between}
    l2 = -D(x - y.detach()).mean()
    l2.backward()
'''


@pytest.mark.parametrize("between", ["D.double()", "D.to(torch.float64)", "D.half()"])
def test_a_conversion_of_the_module_callee_between_the_passes_is_not_harmless(between):
    result = _lint(MODULE_CALLEE.format(between=between), ["GF001"])
    assert not any(f.fixable for f in result.findings), [f.message for f in result.findings]


def test_a_conversion_of_something_else_is_harmless():
    src = MODULE_CALLEE.format(between="z = b.to(torch.float64)")
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [True]
    _safe_fix_is_exact(src, ["GF001"])


def test_fresh_tensor_factories_are_harmless_between_passes_unless_they_write_out():
    """`torch.zeros(...)` between the passes makes a new tensor and touches nothing: no reason.
    With `out=` (or `**kwargs`, which may hold it) it writes into a tensor: not harmless."""
    import libcst as cst

    from gradfix.analysis.between import harmless_call

    class Qualified:
        def qualified(self, func):
            return {"torch." + func.attr.value} if isinstance(func, cst.Attribute) else set()

        def harmless(self, func):
            return False

    def call(text):
        return cst.parse_expression(text)

    assert harmless_call(call("torch.zeros(())"), Qualified())
    assert harmless_call(call("torch.full_like(x, 2.0)"), Qualified())
    assert not harmless_call(call("torch.zeros(3, out=x)"), Qualified())
    assert not harmless_call(call("torch.zeros(3, **kw)"), Qualified())
    assert not harmless_call(call("torch.randn(3)"), Qualified())  # advances the generator
