"""Review round 4, reviewer L: safe GF003 merges in loops that free a graph a later iteration needs.

Causes, each now making the fix unsafe:

- `loops.graph_free` took every `nn.*` and `torch.optim.*` class built as graph-free whatever its
  arguments. A container keeps the modules it is given (`nn.Sequential(Holder(h))`, N_01), a
  ParameterList its non-tensor items (`nn.ParameterList([(h,)])`, N_02), an optimizer a param
  group's other entries (`torch.optim.SGD([{"params": [w], "prior": h}])`, N_18). Now a torch class
  is graph-free only when its arguments are (`loops._class_graph_free`), but for `nn.Parameter` and
  `nn.Buffer`, which detach, and settings objects; an optimizer's parameters may also be a
  module's (`model.parameters()`). A name among the arguments is proven when every value the
  function binds or stores into it is (`loops._names_graph_free`: `torch.optim.SGD([w, v])`).
- `loops._fresh_in_each_iteration` took a `with` body as always running to its end: under
  `contextlib.suppress(E)` it may stop early and the name keeps an earlier iteration's value (N_03).
  A `with` whose context manager is not known to let exceptions through
  (`statements.may_catch`, shared with `backward.caught_reasons`) binds nothing after it.
- Found on the way: a list bound empty before the loop and filled there (`outs.append(h)`) was
  judged by its binding `[]` alone; the stores into it count now (N_90).
"""

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round4").glob("N_*.py"))

EXPECTED = {
    "N_01_gf003_loop_nn_sequential_holds_graph": ("GF003", "`seq` (line 20) is built before the loop"),
    "N_02_gf003_loop_parameterlist_tuple_item": ("GF003", "`pl` (line 11) is built before the loop"),
    "N_03_gf003_loop_bound_in_suppress_with": ("GF003", "`feats` is not bound afresh before every read of it"),
    "N_18_gf003_loop_optimizer_param_group_holds_graph": ("GF003", "`opt` (line 10) is built before the loop"),
    "N_90_gf003_loop_list_appended_before_loop": ("GF003", "`outs` (line 11) is built before the loop"),
}


def test_every_case_has_an_expectation():
    assert {p.stem for p in CASES} == set(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


# -- the helpers behind them ----------------------------------------------------------------------

import libcst as cst  # noqa: E402

from gradfix.analysis.loops import _fresh_in_each_iteration, graph_free  # noqa: E402
from gradfix.engine import lint_bytes  # noqa: E402
from gradfix.options import LintOptions  # noqa: E402


@pytest.mark.parametrize(
    "value, free",
    [
        ("nn.Sequential(nn.Linear(3, 4), nn.ReLU())", True),
        ("nn.Sequential(Holder(h))", False),
        ("nn.ModuleList([Block(h)])", False),
        ("nn.ModuleDict({'a': Block(h)})", False),
        ("nn.ParameterList([(h,)])", False),
        ("nn.ParameterList([nn.Parameter(h)])", True),
        ("nn.Buffer(x @ w)", True),
        ("torch.optim.Adam(model.parameters(), lr=1e-3)", True),
        ("torch.optim.Adam(list(G.parameters()) + list(D.parameters()), lr=1e-3)", True),
        ("torch.optim.SGD(params=net.named_parameters(), lr=0.1)", True),
        ("torch.optim.SGD([{'params': [w], 'prior': h}])", False),
        ("torch.optim.SGD(model.parameters(), lr=h)", False),
        ("torch.optim.SGD(h.parameters(), h)", False),
        ("nn.Linear(d, d)", False),  # a name is proven only where the caller resolves it
    ],
)
def test_torch_classes_are_graph_free_only_from_graph_free_arguments(value, free):
    assert graph_free(cst.parse_expression(value)) is free


@pytest.mark.parametrize(
    "context, fresh",
    [
        ("contextlib.suppress(ZeroDivisionError)", False),
        ("suppress(Exception)", False),
        ("ctx()", False),
        ("torch.no_grad()", True),
        ("torch.autocast('cpu')", True),
        ("contextlib.nullcontext()", True),
        ("torch.no_grad(), contextlib.suppress(ValueError)", False),
        ("open('log.txt')", True),
    ],
)
def test_a_with_that_may_swallow_binds_nothing_after_it(context, fresh):
    source = f"import torch\nimport contextlib\nfor x in xs:\n    with {context}:\n        out = f(x)\n    loss = out.sum()\n"
    module = cst.parse_module(source)
    assert ("out" in _fresh_in_each_iteration(module.body[-1], module)) is fresh


_LOOP = """import torch
import torch.nn as nn

w = torch.randn(3, requires_grad=True)
v = torch.randn(3, requires_grad=True)
x = torch.randn(5, 3)


def train(d=3):
    {before}
    for step in range(3):
        l1 = (model(x) * w).sum()
        l1.backward(retain_graph=True)
        l2 = (w * v).sum()
        l2.backward()
        opt.step()
"""


@pytest.mark.parametrize(
    "before, safe",
    [
        # the reach kept: names resolved to graph-free bindings, a module's parameters
        ("model = nn.Sequential(nn.Linear(3, 4), nn.ReLU()); opt = torch.optim.Adam(model.parameters(), lr=1e-3)", True),
        ("k = 4; model = nn.Linear(3, k); opt = torch.optim.SGD([w, v], lr=0.1)", True),
        ("model = nn.Linear(3, 3); groups = [{'params': [w]}, {'params': [v], 'lr': 0.01}]; opt = torch.optim.SGD(groups, lr=0.1)", True),
        # not proven
        ("model = nn.Linear(3, 3); g = {'params': [w], 'prior': w * 2}; opt = torch.optim.SGD([g], lr=0.1)", False),
        ("model = nn.Linear(3, 3); h = w * 2; opt = torch.optim.SGD([w], lr=0.1, momentum=h)", False),
        ("model = nn.Linear(3, 3); opt = torch.optim.SGD([w], lr=0.1); groups = []; groups.append(w * 2); opt2 = torch.optim.SGD(groups)", True),
        ("model = nn.Linear(d, d); opt = torch.optim.SGD([w], lr=0.1)", False),  # `d` a parameter
    ],
)
def test_gf003_loop_names_in_constructors(before, safe):
    findings = lint_bytes(_LOOP.format(before=before).encode(), "t.py", LintOptions(("GF003",))).findings
    assert [f.fixable for f in findings] == [safe], [f.fix.unsafe_reason for f in findings]


@pytest.mark.parametrize(
    "prelude, context",
    [
        ("from contextlib import suppress as no_grad", "no_grad(ZeroDivisionError)"),
        ("from contextlib import suppress as open", "open(ZeroDivisionError)"),
        ("class nullcontext:\n    def __exit__(self, *a):\n        return True", "nullcontext()"),
        ("def no_grad():\n    return contextlib.suppress(ZeroDivisionError)", "no_grad()"),
        ("torch.no_grad = contextlib.suppress", "torch.no_grad(ZeroDivisionError)"),
        ("from mylib import torch", "torch.no_grad()"),
    ],
)
def test_a_passing_context_manager_is_one_only_where_its_name_resolves_to_it(prelude, context):
    """Review, round 5 (R_06): a name of `PASSING_CONTEXTS` bound otherwise in the file may swallow."""
    source = f"import torch\nimport contextlib\n{prelude}\nfor x in xs:\n    with {context}:\n        out = f(x)\n    loss = out.sum()\n"
    module = cst.parse_module(source)
    assert "out" not in _fresh_in_each_iteration(module.body[-1], module)
