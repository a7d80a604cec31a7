"""Review round 5 (reviewer R, loops): the freshness proofs of GF003/GF005 in a loop.

Causes:
- A function is a value that reads what it closes over at each call: `graph_free` took a lambda
  as graph-free from its defaults alone and a `def`/`class` of the file as code, so one kept in a
  list, a dict, an attribute, behind an alias or in a torch object (`LambdaLR(opt, lambda e: h)`)
  and called in the loop handed it a graph built before it (R_01..R_04, R_12, R_13). Now a
  function's free reads (`loops.free_reads`: its body's, its defaults', its decorators') must be
  proven graph-free where names are resolved.
- What an object registers or is set: `m.register_buffer("b", h)`, `m.register_forward_hook(fn)`,
  `setattr(m, "b", h)`, and a lambda handed to any method, are stores into `m`
  (`loops.stores_into_objects`, R_05..R_08).
- A forward hook registered in the file (on a module or globally: `register_module_forward_hook`)
  runs at each module call of any loop and its result replaces the output: its function must be
  proven graph-free where it is registered (`loops.forward_hook_reasons`, R_05, R_06, R_16).
- What nested functions put into the function's names (`nonlocal cur; cur = h`, `cur.add_(h)`,
  `outs.append(h)`) is among those names' values (`loops.nested_writes`, R_09).
- A torch object (`nn.Module()`, `nn.Linear(...)`, an optimizer) handed before the loop to code
  that may store into it (`object.__setattr__(m, "b", h)`, `vars(m)["b"] = h`, `d =
  getattr(m, "__dict__")`, `register_parametrization(lin, "bias", Holder(h))`, a helper
  `put(m, h)`) is not proven graph-free, as a container so handed was in round 4
  (`loops._handed_on`, R_17..R_21); handing it to `print`, or to a torch callable given nothing
  else that may hold a graph (`nn.init.xavier_uniform_(model.weight)`), keeps the fix (R_22).
- A `with` lets exceptions through by a name only where the name resolves to torch's,
  `contextlib.nullcontext` or the builtin `open` (`statements.may_catch(statement, module)`):
  `from contextlib import suppress as no_grad`, a class of the file named `nullcontext` (R_10,
  R_11).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.loops import free_reads, graph_free, nested_writes, stores_into_objects
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round5").glob("R_*.py"))

EXPECTED = {
    "R_01_gf003_loop_lambda_in_list": ("GF003", "`fns` (line 12) is built before the loop"),
    "R_02_gf003_loop_def_in_list": ("GF003", "`fns` (line 14) is built before the loop"),
    "R_03_gf003_loop_def_alias": ("GF003", "`f` (line 14) is built before the loop"),
    "R_04_gf003_loop_lambdalr_closes_over_graph": ("GF003", "`sched` (line 13) is built before the loop"),
    "R_05_gf003_loop_forward_hook_lambda": ("GF003", "the forward hook registered at line 13 (`lambda m, i, o: o + h`)"),
    "R_06_gf003_loop_forward_hook_def": ("GF003", "the forward hook registered at line 15 (`hook`)"),
    "R_07_gf003_loop_register_buffer_graph": ("GF003", "`m` (line 13) is built before the loop"),
    "R_08_gf003_loop_setattr_graph": ("GF003", "`m` (line 12) is an object the function hands on"),
    "R_09_gf003_loop_nonlocal_write_before_loop": ("GF003", "`cur` (line 12) is a tensor the function hands on"),  # (round 6: a nested function reads it)
    "R_10_gf003_loop_suppress_imported_as_no_grad": ("GF003", "`x` is not bound afresh"),
    "R_11_gf003_loop_own_nullcontext_swallows": ("GF003", "`x` is not bound afresh"),
    "R_12_gf003_loop_lambdas_from_comprehension": ("GF003", "`fns` (line 12) is built before the loop"),
    "R_13_gf003_loop_lambda_stored_as_attribute": ("GF003", "`fns` (line 13) is built before the loop"),
    "R_14_gf005_loop_lambda_in_list": None,
    "R_15_gf003_loop_pure_lambdas_keep_safe_fix": ("GF003", None),
    "R_16_gf003_loop_global_forward_hook": ("GF003", "the forward hook registered at line 12"),
    "R_17_gf003_loop_object_setattr_on_module": ("GF003", "`m` (line 21) is an object the function hands on"),
    "R_18_gf003_loop_vars_item_store_on_module": ("GF003", "`m` (line 21) is an object the function hands on"),
    "R_19_gf003_loop_parametrization_holds_graph": ("GF003", "`lin` (line 21) is an object the function hands on"),
    "R_20_gf003_loop_helper_sets_attribute": ("GF003", "`m` (line 21) is an object the function hands on"),
    "R_21_gf003_loop_dict_of_module_through_getattr": ("GF003", "`m` (line 21) is an object the function hands on"),
    "R_22_gf003_loop_module_handed_to_readers_keeps_safe_fix": ("GF003", None),
}


# Programs that leave process state behind: run in a process of their own.
APART = {
    "R_16_gf003_loop_global_forward_hook",  # a global forward hook stays registered
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


@pytest.mark.parametrize(
    "source, reads",
    [
        ("lambda x: x * h", ["h"]),
        ("lambda x, *a, y=p, **k: x + a + k + q + [j for j in x]", ["p", "q"]),
        ("lambda: [h for h in hs]", ["hs"]),
        ("lambda: (lambda h: h)(g)", ["g"]),
    ],
)
def test_free_reads_of_a_lambda(source, reads):
    assert free_reads(cst.parse_expression(source)) == reads


def test_free_reads_of_a_def_and_a_class():
    module = cst.parse_module(
        "@deco\n"
        "def f(a, b=h0, *, c=lambda: k):\n"
        "    x = a + g\n"
        "    def inner(y):\n"
        "        return y + x + z\n"
        "    class C(Base):\n"
        "        v = 1\n"
        "        u = v + r\n"
        "        def m(self):\n"
        "            return v\n"
        "    global G\n"
        "    G = 1\n"
        "    return G\n"
    )
    assert sorted(free_reads(module.body[0])) == sorted(["deco", "h0", "k", "g", "z", "Base", "r", "v", "G"])


@pytest.mark.parametrize(
    "value, names, free",
    [
        ("[lambda: h]", {"h": False}, False),
        ("[lambda x: x * 2]", {}, True),
        ("{'f': lambda: F.relu(h)}", {"F": True, "h": False}, False),
        ("{'f': lambda: F.relu(z)}", {"F": True, "z": True}, True),
        ("torch.optim.lr_scheduler.LambdaLR(opt, lambda e: h)", {"opt": True, "h": False}, False),
        ("torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.9 ** e)", {"opt": True}, True),
        ("(lambda: h,)", {}, False),  # names not resolved: not proven
    ],
)
def test_a_function_value_is_graph_free_only_where_its_reads_are(value, names, free):
    resolver = (lambda name: names.get(name, False)) if names else None
    assert graph_free(cst.parse_expression(value), resolver) is free


@pytest.mark.parametrize(
    "source, stored",
    [
        ("m.register_buffer('b', h)", [("m", "'b'"), ("m", "h")]),
        ("m.register_forward_hook(hook)", [("m", "hook")]),
        ("m.add_module('x', sub)", [("m", "'x'"), ("m", "sub")]),
        ("setattr(m, 'b', h)", [("m", "h")]),
        ("trainer.on_step(lambda: h)", [("trainer", "lambda: h")]),
        ("writer.add_scalar('loss', loss)", []),
    ],
)
def test_what_an_object_registers_is_stored_into_it(source, stored):
    found = stores_into_objects(cst.parse_module(source))
    assert [(name, cst.Module([]).code_for_node(value)) for name, value in found] == stored


def test_nested_functions_writes_reach_the_names_they_read():
    module = cst.parse_module(
        "def train():\n"
        "    cur = torch.zeros(3)\n"
        "    outs = []\n"
        "    def swap():\n"
        "        nonlocal cur\n"
        "        cur = h\n"
        "    def fill(outs2):\n"
        "        outs.append(h)\n"
        "        outs2.append(g)\n"
        "    hook = lambda m, i, o: box.append(o)\n"
    )
    found = [(name, value.value if isinstance(value, cst.Name) else None) for name, value in nested_writes(module.body[0])]
    assert found == [("cur", "h"), ("outs", "h"), ("box", "o")]
