"""Wrong safe fixes a review found and executed (stop 24), each a program kept as a reproducer.

- `tests/merge_between/`: merges of backward passes (GF001, GF003) and what runs between or inside
  them: a module cast (`model.half()`) or an in-place layer (`nn.ReLU(inplace=True)`) between the
  passes, an operand that reads `.grad` (written by the first pass), `._grad` read or cleared,
  `requires_grad` set between the passes, a last loss written inline that overwrites a saved tensor
  or reads `.grad`, `self.manual_backward` merged with a plain `.backward()`; an exception after
  the first pass caught by the caller (the first pass's gradients stay), a later backward through
  an imported alias (`grad as agrad`), a lambda or a bound method (`bw = l1.backward`), a
  checkpoint that recomputes without the random state, a hook registered through `getattr`.
- `tests/walrus_rewrites/`: a `:=` inside a statement a fix rewrites (GF002, GF004): in both
  operands (`series[(j := j + 1) % 3]`: two evaluations read two items), or before the hoisted term
  (`0 * len(series := series[::-1]) + ...`).
- `tests/gf002_terms/`: GF002 and code of the file that runs between the two terms: a property
  read between the definitions or in the sum's statement, and with a zero correction (the one
  evaluation takes the first term's place) a property or a method call between the terms; a
  coefficient that divides by the symbol it multiplies by (`W * e / W`, nan where `W` is 0: no
  longer cancelled to one, `linear.cancels`).
- `tests/gf004_aliasing/`: GF004 and in-place updates: accumulators that share one tensor (`s = p =
  torch.zeros(())`, `p = s`, `s = rec`), whose `+=` the expansion reads as a rebinding, and
  `s_loss += rec` after the first term, which changed the value the second loss copies.

- `tests/review_round2/`: a second review of those fixes, looking for other spellings (`D_*`: merges
  and GF005, `E_*`: GF002 and GF004): a module that keeps an output between calls (forward hook,
  `parametrize.cached`), a decorator that calls the function, `nn.Embedding(max_norm=...)`,
  exceptions swallowed by `contextlib.suppress` or caught around a caller's caller or an alias,
  a later backward by `getattr`, `partial`, `map`, `methodcaller`, functional activations in place
  by position (`F.relu(h, True)`), a forward pre-hook; accumulators that share a tensor through
  `[z] * 2`, `.cpu()`, `.conj()`, `operator.iadd`, `itertools.repeat`; special methods of the file
  (`__getitem__`, `__len__`, `__bool__`, `__setattr__`) that rebind an operand; properties made by
  an aliased decorator, `cached_property as cached`, under `if`, or assigned after the class;
  (`F_*`, GF001) a module `__getattr__` (PEP 562), an in-place activation in the arguments, a
  division by a name bound to zero (the rewrite's `1 / c` raised), `g = y.grad` read after the first
  backward.

Each used to get a safe fix that changed a gradient or made the program raise. Now each gets no
finding (the pattern is not there) or an unsafe fix whose reason names the cause. Executed: the
original runs; where an unsafe fix rewrites the file, the rewritten program prints something else
or raises (the proof that the fix could not be safe).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from gradfix.rules import select

TESTS = Path(__file__).resolve().parent
HERE = TESTS / "merge_between"
CASES = sorted(p for d in ("merge_between", "walrus_rewrites", "gf002_terms", "gf004_aliasing", "review_round2") for p in (TESTS / d).glob("*.py"))
ALL = tuple(rule.CODE for rule in select(["ALL"]))
# None: no finding; (code, text of the unsafe reason); or (code, None): a safe fix, executed exact.
EXPECTED = {
    "01_module_cast_between": ("GF003", "`model.half()` between the backward calls"),
    "02_inplace_module_between": ("GF003", "`act()` between the backward calls"),
    "03_inplace_module_on_operand_gf001": ("GF001", "`act()` between the two passes"),
    "04_exception_between": ("GF003", "`step` is called where an exception may be caught (line 26)"),
    "05_later_grad_import_alias": ("GF003", "a later `agrad()` (line 18)"),
    "05b_later_backward_lambda": ("GF003", "a later `again()` (line 16)"),
    "05c_later_backward_bound_method": ("GF003", "a later `bw()` (line 16)"),
    "06_checkpoint_recompute_rng": ("GF003", "`checkpoint(...)` (line 15) recomputes its forward"),
    "07_operand_reads_grad": None,
    "08_underscore_grad_read_between": None,
    "08b_underscore_grad_clear_between": None,
    "09_requires_grad_store_between": None,
    "10_inplace_in_last_inline_loss": None,
    "10b_grad_read_in_last_inline_loss": None,
    "11_manual_backward_mixed_with_plain": None,
    "12_hook_via_getattr": ("GF003", '`"register_hook"` (line 9) registers a gradient hook'),
    "gf002_01_walrus_in_sum": ("GF002", "`(z_e := z_e * 2)` (line 14) binds a name inside a statement the fix rewrites"),
    "05_cancelled_zero_coefficient": None,
    "08_property_between_definitions": ("GF002", "`self.reg` (a property of the file) (line 22) between the definitions"),
    "09_property_in_same_statement": ("GF002", "moves before `self.reg` (a property of the file) in the same statement"),
    "10_property_between_terms_zero_correction": ("GF002", "moves before `self.reg` (a property of the file)"),
    "11_call_between_terms_zero_correction": ("GF002", "moves before `self.bump()` in the same statement"),
    "01_aliased_accumulators_chained": ("GF004", "the loop at line 29 adds in place to `p_loss`, whose object another name may hold"),
    "02_aliased_accumulators_loop_fusion": ("GF004", "the loop at line 29 adds in place to `s_loss`, whose object another name may hold"),
    "08_aliased_accumulators_assign": ("GF004", "the loop at line 30 adds in place to `p_loss`, whose object another name may hold"),
    "09_accumulator_aliases_rec": ("GF004", "the loop at line 30 adds in place to `s_loss`, whose object another name may hold"),
    "10_inplace_on_carrier_changes_value": ("GF004", "`s_loss += rec` (line 26) updates in place the value the fix gives `s_loss`"),
    "gf004_03_walrus_in_operand_loop": ("GF004", "`(j := j + 1)` (line 32) binds a name"),
    "gf004_04_walrus_in_operand_comprehension": ("GF004", "`(j := j + 1)` (line 29) binds a name"),
    "gf004_05_walrus_in_operand_loop_fusion": ("GF004", "`(j := j + 1)` (line 31) binds a name"),
    "gf004_06_walrus_hoisted_past_comprehension": ("GF004", "`series := series[::-1]` (line 28) binds a name"),
    "gf004_07_walrus_hoisted_past_loop_term": ("GF004", "`series := series[::-1]` (line 31) binds a name"),
    "D_01_gf005_parametrize_cached": ("GF005", '`model()` (line 12) is not proven to keep no'),
    "D_02_gf005_forward_hook_cache": ("GF005", '`model()` (line 21) is not proven to keep no'),
    "D_03_gf005_decorator_calls_twice": ("GF005", '`inner` is decorated (`@twice`): the decorator'),
    "D_04_gf003_embedding_max_norm_between": ("GF003", '`emb()` between the backward calls may step,'),
    "D_05_gf003_contextlib_suppress": ("GF003", 'an exception after the first backward (out of'),
    "D_06_gf003_try_around_transitive_caller": ("GF003", '`train` is called where an exception may be'),
    "D_07_gf003_try_around_aliased_call": ("GF003", '`step` is handed on by name (line 16): gradfix'),
    "D_08_gf003_later_getattr_backward": ("GF003", 'a later `getattr()` (line 14) may use a graph'),
    "D_09_gf003_later_partial_autograd_backward": ("GF003", 'a later `torch.autograd.backward`, which may'),
    "D_10_gf003_later_map_unbound_tensor_backward": ("GF003", 'a later `torch.Tensor.backward`, which may'),
    "D_11_gf003_later_methodcaller_backward": ("GF003", 'a later `operator.methodcaller()` (line 14) may'),
    "D_12_gf003_later_getattr_autograd_module": ("GF003", 'a later `getattr()` (line 14) may use a graph'),
    "D_13_gf005_later_backward_as_key_function": None,
    "D_14a_gf003_F_relu_positional_inplace": None,
    "D_14b_gf003_F_dropout_positional_inplace": None,
    "D_14c_gf003_F_leaky_relu_positional_inplace": None,
    "D_14d_gf003_F_hardtanh_positional_inplace": None,
    "D_14e_gf003_F_elu_positional_inplace": None,
    "D_14f_gf003_F_silu_positional_inplace": None,
    "D_15_gf003_forward_pre_hook_inplace_between": ("GF003", '`lin()` between the backward calls may step,'),
    "F_01_pep562_module_getattr": ("GF001", '`m.z` may be computed anew on each read (a'),
    "F_02_inplace_leaky_relu_in_arg": ("GF001", '`F.leaky_relu(y, 0.5, True)` in the arguments'),
    "F_03_inplace_elu_in_arg": ("GF001", '`F.elu(y, 1.0, True)` in the arguments modifies'),
    "F_04_div_by_zero_name": ("GF001", 'the coefficient divides by `c`, bound to zero:'),
    "F_05_operand_aliases_dot_grad": None,
    "F_07_inplace_selu_in_arg": ("GF001", '`F.selu(y, True)` in the arguments modifies a'),
    "E_01_gf004_tuple_unpack_repeated_list": ("GF004", 'the loop at line 29 adds in place to `p_loss`,'),
    "E_02_gf004_alias_via_cpu": ("GF004", 'the loop at line 31 adds in place to `p_loss`,'),
    "E_03_gf004_alias_via_conj": ("GF004", 'the loop at line 31 adds in place to `p_loss`,'),
    "E_04_gf004_alias_via_operator_iadd": ("GF004", 'the loop at line 32 adds in place to `p_loss`,'),
    "E_05_gf002_getitem_in_same_statement": ("GF002", '`__getitem__` (line 11) runs without a call by'),
    "E_06_gf002_len_dunder_between_definitions": ("GF002", '`__len__` (line 11) runs without a call by name'),
    "E_07_gf002_bool_dunder_in_same_statement": ("GF002", '`__bool__` (line 11) runs without a call by'),
    "E_08_gf002_property_via_alias_decorator": ("GF002", 'the evaluation moves before `self.reg` (a'),
    "E_09_gf002_cached_property_imported_as": ("GF002", 'the evaluation moves before `self.reg` (a'),
    "E_10_gf002_setattr_between_definitions": ("GF002", '`__setattr__` (line 12) runs without a call by'),
    "E_11_gf002_property_in_class_body_if": ("GF002", 'the evaluation moves before `self.reg` (a'),
    "E_12_gf004_len_dunder_between_terms": ("GF004", '`__len__` (line 19) runs without a call by name'),
    "E_13_gf002_property_assigned_after_class": ("GF002", 'the evaluation moves before `self.reg` (a'),
    "E_14_gf004_alias_via_itertools_repeat": ("GF004", 'the loop at line 30 adds in place to `p_loss`,'),
}


def _run(source: str) -> str:
    """What the program prints, or the exception it raises."""
    out = io.StringIO()
    sys.path.insert(0, str(HERE / "stub"))  # a stand-in for pytorch_lightning (11)
    # A module of its own, as `__main__` (`sys.modules[__name__]` and a module `__getattr__`: F_01).
    module, main = types.ModuleType("__main__"), sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, "train.py", "exec"), module.__dict__)
    except Exception as exc:  # noqa: BLE001 - the rewrite's failure is the observation
        return f"raised {type(exc).__name__}"
    finally:
        sys.modules["__main__"] = main
        sys.path.remove(str(HERE / "stub"))
        sys.modules.pop("pytorch_lightning", None)
    return out.getvalue()


def test_every_case_has_its_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_no_safe_fix_and_the_unsafe_one_is_wrong(path: Path):
    check_case(path, EXPECTED[path.stem])


def _run_apart(source: str) -> str:
    """`_run` in a process of its own, for programs that leave something behind in the process that
    runs them (an `atexit` callback, a signal handler, a finalizer): stdout and stderr together,
    and what the process's exit printed (`tests.apart`: forked from an interpreter that imported
    torch once, exiting as a fresh `python train.py` does)."""
    from tests.apart import run_apart

    return run_apart(source)


def check_case(path: Path, expected, *, apart: bool = False) -> None:
    """The finding `expected` names, or none (None); no safe fix unless `expected` says one is exact;
    the original runs, and the unsafe rewrite prints something else or raises. `apart`: run the
    programs in a process of their own (`_run_apart`)."""
    run = _run_apart if apart else _run
    source = path.read_text()
    findings = lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings
    if expected is None:
        assert findings == []
    else:
        code, reason = expected
        assert [(f.code, f.fixable) for f in findings] == [(code, reason is None)]
        if reason is not None:
            assert reason in findings[0].fix.unsafe_reason
    safe = lint_bytes(source.encode(), "train.py", LintOptions(ALL, fix=True)).fixed
    pytest.importorskip("torch")
    original = run(source)
    assert not original.startswith("raised"), original
    if expected is not None and expected[1] is None:
        assert safe is not None and safe != source.encode()
        assert _numbers(run(safe.decode())) == pytest.approx(_numbers(original), rel=1e-5, abs=1e-7)
        return
    assert safe in (None, source.encode())
    unsafe = lint_bytes(source.encode(), "train.py", LintOptions(ALL, fix=True, unsafe_fixes=True)).fixed
    if expected is not None:
        assert unsafe is not None and unsafe != source.encode()
        assert run(unsafe.decode()) != original


def _numbers(output: str):
    """The numbers a program printed, in order (a safe fix may round differently, never more)."""
    assert not output.startswith("raised"), output
    return [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", output)]
