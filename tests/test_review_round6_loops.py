"""Review round 6 (reviewer V, loops and GF004): what round 5's loop and GF004 proofs still missed.

Causes:
- A module-level name bound without a binding statement: `globals()["H"] = h`, `exec("global H; H = h")`,
  `setattr(sys.modules[__name__], "H", h)`, `vars(sys.modules[__name__])["H"] = h` (V_01..V_04). The
  loop proof read only binding statements; now `exprs.dynamic_global` (and `may_change_builtins`, for
  a builtin the loop reads) makes every module name (`loops.loop_reasons`, `_names_graph_free`) unproven.
- Code the file stores into torch, `builtins` or a module of its own (`nn.Linear.forward = lambda ...: x + h`,
  `setattr(nn.Linear, "forward", f)`, `F.linear = f`, `builtins.abs = f`): the loop's module call or
  builtin runs it, and reads `h` (V_05..V_08, `loops.patch_reasons`).
- `_handed_on` searched the module only up to the loop: a function defined below the loop's function,
  called before the loop, hands a container on (`dict.__setitem__(cfg, ...)`, V_09).
- A class body's `nonlocal` (and `global`) bindings were not among the names' values (V_10).
- A function's value is its decorator's result and its defaults: `@functools.lru_cache` keeps the first
  call's result, graph and all; `def feat(cache={})` stores into its default (V_11, V_12,
  `loops._plain_function`).
- A tensor from before the loop updated in place before it or in it (`buf.copy_(h)`), or handed on
  before it (`v = buf; v.copy_(h)`, `torch.Tensor.copy_(buf, h)`, `put(buf, h)`): only stores were
  followed (V_13..V_17). In-place updates given only Python values or detached tensors
  (`running.mul_(0.9).add_(out.detach())`) stay proven (V_27).
- GF004: a carrier printed or made text (`print(s_loss)`, `repr`, `'%s' %`, `.format`, `!r`, a display in
  an f-string) shows its `grad_fn` (V_18..V_20, V_28); its shape, or the carrier itself in an f-string
  (a number), does not (V_29).
- `m.apply(fn)` hands `fn` every submodule: what `fn` stores (`register_buffer("extra", h)`) is stored into
  `m` (V_30).
- GF004 (`exprs.dynamic_global`): the file's own module reached by an alias (`_m = _me`), a display or a
  loop target, `__setattr__` on it, or `setattr` handed on as a value (`partial(setattr, _me)`,
  `map(setattr, ...)`) (V_21..V_26).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.loops import graph_free
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round6").glob("V_*.py"))
REBINDS = "the file may rebind builtins"
SHOWS = "shows whether `s_loss` requires grad: after the rewrite it carries the other term's gradient"
BUILT = "is built before the loop and read in it"
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"
STORED = "code the loop may run (a torch class or function, a builtin), and is not proven to read only graph-free values"

EXPECTED = {
    "V_01_gf003_loop_global_bound_by_globals_dict": ("GF003", "`H` (read on line 15) is a name of the module, which `globals` (line 13) may bind to any value"),
    "V_02_gf003_loop_global_bound_by_exec": ("GF003", "`H` (read on line 15) is a name of the module, which `exec` (line 13) may bind to any value"),
    "V_03_gf003_loop_global_set_on_sys_modules": ("GF003", "`H` (read on line 16) is a name of the module, which `sys.modules` (line 14)"),
    "V_04_gf003_loop_global_set_through_vars_of_module": ("GF003", "`H` (read on line 16) is a name of the module, which `sys.modules` (line 14)"),
    "V_05_gf003_loop_torch_class_forward_patched": ("GF003", "`lambda self, x: x + h` (line 14) is stored into `nn`, " + STORED),
    "V_06_gf003_loop_setattr_patches_torch_class": ("GF003", "`lambda self, x: x + h` (line 16) is stored into `nn`, " + STORED),
    "V_07_gf003_loop_torch_function_patched": ("GF003", "`lambda x, wt, b=None: x + h` (line 16) is stored into `F`, " + STORED),
    "V_08_gf003_loop_builtin_patched_through_builtins": ("GF003", "`lambda x: x + h` (line 15) is stored into `builtins`, " + STORED),
    "V_09_gf003_loop_container_filled_by_function_defined_later": ("GF003", "`cfg` (line 9) is a container the function hands on"),
    "V_10_gf003_loop_nonlocal_in_class_body": ("GF003", "`cur` (line 18) " + BUILT),
    "V_11_gf003_loop_lru_cache_keeps_graph": ("GF003", "`feat` (line 11) " + BUILT),
    "V_12_gf003_loop_mutable_default_keeps_graph": ("GF003", "`feat` (line 10) " + BUILT),
    "V_13_gf003_loop_tensor_copied_into_before_loop": ("GF003", "`buf` (line 16) " + BUILT),
    "V_14_gf003_loop_tensor_copied_through_alias": ("GF003", "`buf` (line 15) " + TENSOR),
    "V_15_gf003_loop_tensor_copied_by_unbound_method": ("GF003", "`buf` (line 15) " + TENSOR),
    "V_16_gf003_loop_tensor_filled_by_helper": ("GF003", "`buf` (line 16) " + TENSOR),
    "V_17_gf003_loop_tensor_copied_into_in_loop": ("GF003", "`buf` (line 16) " + BUILT),
    "V_18_gf004_print_of_carrier_shows_grad_fn": ("GF004", "`print('frozen', s_loss)` (line 25) " + SHOWS),
    "V_19_gf004_repr_of_carrier_shows_grad_fn": ("GF004", "`repr(s_loss)` (line 25) " + SHOWS),
    "V_20_gf004_percent_format_of_carrier": ("GF004", "`'%s' % s_loss` (line 25) " + SHOWS),
    "V_21_gf004_module_alias_rebinds_sum": ("GF004", REBINDS),
    "V_22_gf004_module_dunder_setattr_rebinds_sum": ("GF004", REBINDS),
    "V_23_gf004_partial_setattr_rebinds_sum": ("GF004", REBINDS),
    "V_24_gf004_map_setattr_rebinds_sum": ("GF004", REBINDS),
    "V_25_gf004_module_as_loop_target_rebinds_sum": ("GF004", REBINDS),
    "V_26_gf004_type_setattr_rebinds_sum": ("GF004", REBINDS),
    "V_27_gf003_loop_plain_code_keeps_safe_fix": ("GF003", None),
    "V_28_gf004_fstring_of_display_of_carrier": ("GF004", "`{[s_loss]}` (line 25) " + SHOWS),
    "V_29_gf004_shape_and_number_format_of_carrier_keeps_safe_fix": ("GF004", None),
    "V_30_gf003_loop_apply_registers_graph": ("GF003", "`lin` (line 19) " + BUILT),
}

# Programs that patch torch or builtins (left patched), or import themselves as `train` (the file
# must be `train.py` on the path): run in a process of their own.
APART = {
    "V_05_gf003_loop_torch_class_forward_patched",
    "V_06_gf003_loop_setattr_patches_torch_class",
    "V_07_gf003_loop_torch_function_patched",
    "V_08_gf003_loop_builtin_patched_through_builtins",
    "V_21_gf004_module_alias_rebinds_sum",
    "V_22_gf004_module_dunder_setattr_rebinds_sum",
    "V_23_gf004_partial_setattr_rebinds_sum",
    "V_24_gf004_map_setattr_rebinds_sum",
    "V_25_gf004_module_as_loop_target_rebinds_sum",
    "V_26_gf004_type_setattr_rebinds_sum",
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def _dynamic(source: str):
    from gradfix.analysis.exprs import code_of, dynamic_global

    found = dynamic_global(cst.parse_module(source))
    return None if found is None else code_of(found).strip()


@pytest.mark.parametrize(
    "source, expected",
    [
        # The file's module maybe, handed on: then written under another name.
        ("import train as me\nm = me\n", "me"),
        ("import train as me\nfor m in [me]:\n    pass\n", "me"),
        ("from pkg import train\nhelper(train)\n", "train"),
        ("import train as me\nme.__setattr__('sum', f)\n", "me.__setattr__('sum', f)"),
        ("import train as me\ntype(me).__setattr__(me, 'sum', f)\n", "type(me).__setattr__(me, 'sum', f)"),
        ("import functools\nfunctools.partial(setattr, obj)('a', 1)\n", "setattr"),
        ("list(map(setattr, objs, names, values))\n", "setattr"),
        # Read, called, given to a reading builtin; a torch module handed on (not this file's).
        ("import train\nprint(train.W, isinstance(train, object))\ntrain.step()\n", None),
        ("import torch\nfrom torch.optim import SGD\nopt_class = SGD\nf(torch)\n", None),
        ("class M:\n    def __setattr__(self, k, v):\n        object.__setattr__(self, k, v)\n        super().__setattr__(k, v)\n", None),
    ],
)
def test_dynamic_global_sees_a_module_handed_on(source, expected):
    assert _dynamic(source) == expected


@pytest.mark.parametrize(
    "source, free",
    [
        ("@functools.lru_cache(maxsize=None)\ndef f():\n    return 1\n", False),
        ("@my_decorator\ndef f():\n    return 1\n", False),
        ("@torch.no_grad()\ndef f(x):\n    return x * 2\n", True),
        ("@staticmethod\ndef f(x):\n    return x\n", True),
        ("def f(cache={}):\n    cache['h'] = 1\n    return cache\n", False),
        ("def f(c=CACHE):\n    keep(c)\n", False),
        ("def f(buf=torch.zeros(3)):\n    buf.add_(1)\n", False),
        ("def f(k=(2.0, 3.0), n=None):\n    return k[0]\n", True),
    ],
)
def test_a_function_is_its_code_only_undecorated_and_without_written_defaults(source, free):
    function = cst.parse_module(source).body[0]
    assert graph_free(function, lambda name: True) is free
