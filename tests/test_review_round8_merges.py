"""Review round 8 (reviewer Z): merges of backward passes and GF005, holes in round 7's proofs of
special methods, hook names and graph uses.

Causes:
- `facts._changes_state` (a special method that may change state: `__rmod__`, `__bool__`,
  `__format__`, ...) followed only what the method hands its operands to: a call given none of them
  (`opt.zero_grad()`, `net.load_state_dict(snapshot)`, `torch.manual_seed(0)`) was taken as
  changing nothing, and a read of `w.grad` (the first pass's gradient) was no change at all. Run
  between the passes (`i % every`, `if ema:`, `f"{norm}"`), it zeroed the first pass's gradient,
  wrote a saved tensor in place, or read a gradient the merge has not written yet. Now every call
  in a special method must be proven to change nothing whatever it is handed
  (`facts._changes_nothing`: builtins of `_DUNDER_SAFE_BUILTINS`, `getattr` by a literal name,
  read-only and pure tensor methods but module casts, pure and deterministic functions of torch,
  `math`), and a `.grad`/`._grad` read (or its name as a string) makes the method count.
- `FileFacts.gradient_hooks` skipped imports: `register_multi_grad_hook as on_grads` registers a
  hook under a name no list has. Now the name a registration is imported as counts (forward hooks
  alike).
- `backward.computed_method_calls` counted a getter's call with a computed name only where it
  was called at once or assigned: handed to `functools.partial`, put in a list, returned by a lambda
  it registers a hook all the same. Now such a call counts unless its result is only shown,
  compared or dropped. A getter taken from (`getattr.__call__(w, name)`) or imported under
  another name (`from operator import attrgetter as pick`) counts, and so do `eval`/`exec`, which
  run code built as text (`eval("w.regis" + "ter_hook")`).
- `Backpropagators.uses` counted calls that backpropagate, not reads of a graph's saved tensors:
  `l1.grad_fn.next_functions[0][0]._saved_result` after the passes raises once the merged backward
  (or a backward without `retain_graph=True`, GF005) has freed the graph. Now a reference to
  `grad_fn`, `_grad_fn` or `get_gradient_edge` is a use of the graph, unless only compared,
  tested or shown.

- A custom operator's backward formula (`torch.library.custom_op` then `op.register_autograd(bw)`,
  `torch.library.register_autograd("ns::op", bw)`) runs once per backward pass, like a hook, but
  `functions.backward_methods` reads only a class's `backward`: one that counts its calls gave other
  gradients after the merge (Z_14, found after the review). `register_autograd` is now one of the
  `GRADIENT_HOOKS`. So is a hook table written by hand (`lin._backward_hooks[0] = fn` with
  `lin._is_full_backward_hook = True`; Z_15): any name holding `backward_hook`, `backward_pre_hook` or
  `grad_hook` (`vocabulary.names_gradient_hook`), as forward hooks' tables already were.

Known hole (c), a module-level optimizer whose param group keeps the loss (GF005): at module level
every later backward of the file is in the scope GF005 checks, and torch's optimizers never
backpropagate through a param group; the group is only a way to reach the loss's graph later, so
the reproducer (Z_10) is a read of its saved tensors through the group, closed with the others.

Near misses that stay safe and exact: special methods calling builtins, pure torch and math
functions and read-only methods (Z_12); getters with computed names whose results are only shown
or compared, a module's `eval()`, and a `grad_fn` only tested and named (Z_13).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.backward import computed_method_calls
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round8").glob("Z_*.py"))

_DUNDER = "runs without a call by name"
_COMPUTED = "calls a method by a computed name"
EXPECTED = {
    "Z_01_gf003_dunder_reads_grad_between_passes": ("GF003", f"`__format__` (line 9) {_DUNDER}"),
    "Z_02_gf003_dunder_zero_grad_through_library_method": ("GF003", f"`__rmod__` (line 13) {_DUNDER}"),
    "Z_03_gf003_dunder_loads_snapshot_through_library_method": ("GF003", f"`__bool__` (line 12) {_DUNDER}"),
    "Z_04_gf003_hook_registration_imported_as": ("GF003", "`on_grads()` (line 3) registers a gradient hook"),
    "Z_05_gf003_hook_getter_handed_to_partial": ("GF003", f'`getattr(w, "kooh_retsiger"[::-1])` (line 8) {_COMPUTED}'),
    "Z_06_gf003_hook_getter_imported_as": ("GF003", f"`attrgetter` (line 2) {_COMPUTED}"),
    "Z_07_gf003_hook_getter_called_through_dunder_call": ("GF003", f"`getattr` (line 6) {_COMPUTED}"),
    "Z_08_gf003_hook_registered_by_eval": ("GF003", f"`eval` (line 6) {_COMPUTED}"),
    "Z_09_gf003_saved_tensor_read_after_merge": ("GF003", "a later `l1.grad_fn`, which may read tensors the graph saved, (line 13)"),
    "Z_14_gf003_custom_op_backward_counts_calls": ("GF003", "`scale.register_autograd()` (line 23) registers a gradient hook"),
    "Z_15_gf003_hook_table_written_by_hand": ("GF003", "`lin._backward_hooks` (line 15) may hold or register gradient hooks"),
    # GF005: `retain_graph=True` is needed: no finding.
    "Z_10_gf005_module_optimizer_group_keeps_loss": None,
    "Z_11_gf005_saved_tensor_read_after_backward": None,
    # Near misses: a safe fix, executed exact.
    "Z_12_gf003_dunder_pure_calls_near_miss": ("GF003", None),
    "Z_13_gf003_getter_values_and_graph_tests_near_miss": ("GF003", None),
}

# Programs that leave process state behind: run in a process of their own.
APART = {
    "Z_14_gf003_custom_op_backward_counts_calls",  # an operator registered once per process
    "Z_04_gf003_hook_registration_imported_as",  # hooks on module-level tensors
    "Z_05_gf003_hook_getter_handed_to_partial",
    "Z_06_gf003_hook_getter_imported_as",
    "Z_07_gf003_hook_getter_called_through_dunder_call",
    "Z_08_gf003_hook_registered_by_eval",
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks ------------------------------------------------------------------------------


def _dunders(source):
    from gradfix.analysis.facts import FileFacts
    from gradfix.analysis.positions import node_maps

    module = cst.parse_module(source)
    facts = FileFacts(module, node_maps(module))
    return [n.name.value if isinstance(n, cst.FunctionDef) else module.code_for_node(n) for n in facts.implicit_dunders]


def test_dunder_calls_must_change_nothing():
    head = "import math\nimport random\nimport torch\nopt = None\n\nclass A:\n    def __rmul__(self, other):\n        {body}\n        return other\n"
    changes = [
        "opt.zero_grad()",
        "torch.manual_seed(0)",
        "random.random()",
        "net.load_state_dict(sd)",
        "net.half()",
        "print(w.grad)",
        'print(getattr(w, "grad"))',
        "print(getattr(w, name))",
        "next(counter)",
        "torch.nn.utils.vector_to_parameters(v, ps)",
    ]
    for body in changes:
        assert _dunders(head.format(body=body)) == ["__rmul__"], body
    nothing = [
        "y = float(other)",
        "y = math.sqrt(2.0) + torch.tanh(torch.tensor(1.0)).item()",
        "y = other.detach().sum().item()",
        'y = getattr(self, "k", 1)',
        "print(len(str(other)))",
    ]
    for body in nothing:
        assert _dunders(head.format(body=body)) == [], body
    # A name the file binds is not the builtin.
    assert _dunders(head.format(body="y = float(other)") + "float = print\n") == ["__rmul__"]


def test_computed_getters_wherever_they_go():
    source = """from operator import attrgetter as pick
from operator import methodcaller
functools.partial(getattr(w, name), fn)()
fs = [getattr(w, name)]
(lambda n: getattr(w, n))(k)
getattr.__call__(w, name)
eval(src)
exec(code)
print(getattr(cfg, key), f"{getattr(cfg, key)}")
getattr(cfg, key) == 2
getattr(cfg, key)
net.eval()
def f(eval=None):
    return g(eval=1)
"""
    module = cst.parse_module(source)
    assert [module.code_for_node(c) for c in computed_method_calls(module)] == [
        "attrgetter", "getattr(w, name)", "getattr(w, name)", "getattr(w, n)", "getattr", "eval", "exec",
    ]


def test_graph_reads_are_uses():
    from gradfix.analysis.backward import Backpropagators

    source = """def f():
    a = l.grad_fn
    l.grad_fn(g)
    print(l.grad_fn.next_functions)
    node = torch.autograd.graph.get_gradient_edge(l).node
    getattr(l, "grad_fn")
    if l.grad_fn is None or not l.grad_fn:
        print(l.grad_fn, type(l.grad_fn), f"{l.grad_fn}")
"""
    module = cst.parse_module(source)
    found = Backpropagators(module)
    shown = [module.code_for_node(n) for n in found.uses(module.body[0])]
    assert shown == ["l.grad_fn", "l.grad_fn", "l.grad_fn", "torch.autograd.graph.get_gradient_edge", '"grad_fn"'], shown


@pytest.mark.parametrize("name, expected", [
    ("register_hook", True), ("register_full_backward_hook", True), ("_backward_hooks", True),
    ("_backward_pre_hooks", True), ("_global_backward_hooks", True), ("_is_full_backward_hook", True),
    ("_post_accumulate_grad_hooks", True), ("register_autograd", True),
    ("backward", False), ("hooks", False), ("_forward_hooks", False), ("grad", False),
])
def test_names_gradient_hook(name, expected):
    from gradfix.analysis.vocabulary import names_gradient_hook

    assert names_gradient_hook(name) is expected
