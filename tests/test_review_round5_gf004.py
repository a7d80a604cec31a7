"""Wrong safe fixes a fifth review found and executed in GF004 (reviewer r5d, `tests/review_round5/T_*`).

Causes:
- Builtins, callees and coefficients rebound through the file's own module reached by routes the
  name-based checks did not see: the file importing itself under its module name (`import train as
  _me; _me.sum = f`, `_me.kl = g`, `_me.k = 0.5`), `import_module` and `sys.modules` imported by name
  (`from importlib import import_module`, `from sys import modules`), `inspect.getmodule(f)`, and the
  `builtins` module as a builtin function's `__self__` (`print.__self__.sum = f`,
  `setattr(len.__self__, 'sum', f)`). `exprs.dynamic_global` now counts any store of an attribute
  named as a builtin or a global of the file on a module, builtin or unbound name.
- A carrier's autograd state read through an expression derived from it (`s_loss.view(1).requires_grad`,
  `(s_loss * 1).grad_fn`, `(s_loss + 0).is_leaf`), or through a name the statement binds to it (`[t.requires_grad
  for t in (s_loss,)]` in a `print`): only `s_loss.requires_grad` itself was seen.
- A value read through `:=` (`(t := s_loss).item()`): `t` keeps the tensor (`exprs.ends_in_value`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round5").glob("T_*.py"))
REBINDS = "the file may rebind builtins (a star import, `__builtins__`, a write to the `builtins` module, or a global bound through `globals()`, `exec`, `setattr` or an attribute store on a module the file may itself be)"
STATE = "reads whether `{}` requires grad: after the rewrite it carries the other term's gradient"
# None: no finding; (code, text of the unsafe reason); or (code, None): a safe fix, executed exact.
EXPECTED = {
    "T_01_gf004_sum_bound_through_self_import": ("GF004", REBINDS),
    "T_02_gf004_sum_bound_through_import_module_name": ("GF004", REBINDS),
    "T_03_gf004_sum_bound_through_from_sys_modules": ("GF004", REBINDS),
    "T_04_gf004_sum_bound_through_inspect_getmodule": ("GF004", REBINDS),
    "T_05_gf004_builtins_through_print_self": ("GF004", REBINDS),
    "T_06_gf004_setattr_on_len_self": ("GF004", REBINDS),
    "T_07_gf004_callee_rebound_through_self_import": ("GF004", REBINDS),
    "T_08_gf004_coefficient_rebound_through_self_import": ("GF004", REBINDS),
    "T_09_gf004_requires_grad_of_view_of_carrier": ("GF004", "`s_loss.view(1).requires_grad` (line 25) " + STATE.format("s_loss")),
    "T_10_gf004_grad_fn_of_expression_of_carrier": ("GF004", "`(s_loss * 1).grad_fn` (line 25) " + STATE.format("s_loss")),
    "T_11_gf004_is_leaf_of_expression_of_carrier": ("GF004", "`(s_loss + 0).is_leaf` (line 25) " + STATE.format("s_loss")),
    "T_12_gf004_grad_fn_of_detached_carrier_expression": ("GF004", "`(p_loss * 1).grad_fn` (line 24) " + STATE.format("p_loss")),
    "T_13_gf004_requires_grad_through_comprehension": ("GF004", "`t.requires_grad` (line 25) may read" + STATE.format("s_loss")[5:]),
    "T_14_gf004_grad_fn_through_comprehension_in_fstring": ("GF004", "`t.grad_fn` (line 25) may read" + STATE.format("s_loss")[5:]),
    "T_15_gf004_carrier_bound_by_walrus_in_value_read": ("GF004", "`s_loss` is also read as a tensor (line 25)"),
}

# Programs that import themselves as `train` (the file must be `train.py` on the path) or leave the
# interpreter changed (`builtins.sum` rebound): run in a process of their own.
APART = {
    "T_01_gf004_sum_bound_through_self_import",
    "T_05_gf004_builtins_through_print_self",
    "T_06_gf004_setattr_on_len_self",
    "T_07_gf004_callee_rebound_through_self_import",
    "T_08_gf004_coefficient_rebound_through_self_import",
}


def test_every_case_has_an_expectation():
    assert {p.stem for p in CASES} == set(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def _dynamic(source: str):
    import libcst as cst

    from gradfix.analysis.exprs import code_of, dynamic_global

    found = dynamic_global(cst.parse_module(source))
    return None if found is None else code_of(found).strip()


@pytest.mark.parametrize(
    "source, expected",
    [
        # A module (maybe the file itself) or `builtins`, written by an attribute named as a builtin or a global.
        ("import train\ntrain.sum = f\n", "train.sum"),
        ("from pkg import train as me\nk = 1\ndef g():\n    me.k = 0.5\n", "me.k"),
        ("import train\ndel train.len\n", "train.len"),
        ("import train\ntrain.sum, x = f, 1\n", "train.sum"),
        ("print.__self__.sum = f\n", "print.__self__"),
        ("setattr(len.__self__, 'sum', f)\n", "len.__self__"),
        ("from importlib import import_module\n", "from importlib import import_module"),
        ("from sys import modules as m\n", "from sys import modules as m"),
        ("import sys as s\ns.modules[__name__].sum = f\n", "s.modules"),
        ("import inspect\ninspect.getmodule(f).sum = g\n", "inspect.getmodule"),
        ("import sys\ngetattr(sys, 'modules')[__name__].sum = f\n", "'modules'"),
        ("print(vars(args))\n", None),
        # Ordinary stores: no global of the file, or an object the file binds.
        ("import torch\ntorch.backends.cudnn.benchmark = True\n", None),
        ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", None),
        ("model = 1\ndef f(trainer):\n    trainer.model = model\n    trainer.sum = 0\n", None),
        ("class M:\n    def reset(self):\n        self.sum = 0\n        self.len = 0\n", None),
        ("def f(m):\n    m.eval()\n    for x in m.modules():\n        pass\n", None),
        ("import torch\nisinstance(x, torch.nn.modules.batchnorm._BatchNorm)\n", None),
    ],
)
def test_dynamic_global(source, expected):
    assert _dynamic(source) == expected
