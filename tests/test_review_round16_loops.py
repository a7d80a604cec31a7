"""Review round 16 (reviewer X, loops and GF005): what round 15's proofs still missed.

Causes:
- `graph_free` (and `_plain_tensor`, `_torch_object`, `_python_value`) read a call as torch's by its
  text (`torch.zeros_like(h)` is a factory, `h.detach()` holds no graph), and round 15 proved only
  that the roots (`torch`, `nn`, `F`, `optim`) are bound by imports. A store into torch's object of
  that name (`torch.zeros_like = lambda t: t * 1`: X_01; `torch.Tensor.detach = lambda t: t * 1`:
  X_02) makes the call something else; `patch_reasons` judged only the value stored (a lambda that
  reads nothing is graph-free), not what a call of it returns. Now `loops.torch_names_patched`: an
  attribute name the file may store (`introspection.bound_attribute_names`; any name where it may
  store any) among the names these proofs read by text (`_TRUSTED_METHOD_NAMES`, and every part
  after the root of a torch-rooted call's path in the file) makes `loop_reasons` unsafe.
- The same proofs trust builtins by their names (`float(h)` is a number, `list(xs)` holds what `xs`
  holds: `PYTHON_VALUES`, `BUILTINS_GRAPH_FREE`) and `.item()`/`.tolist()`/`.detach()` on any
  receiver, where the file may define them: `def float(t): return t * 1` (X_08), a class of the
  file with `def item(self): return self.t * 1` (X_09). Now `torch_names_patched` also takes a
  binding of those builtins anywhere in the file (`_TRUSTED_BUILTINS`), a change of builtins unseen
  (`may_change_builtins`), and a class-scope binding of a `_TRUSTED_METHOD_NAMES` name.
- GF005's reach of a method by a computed name missed three more standard-library resolvers: a
  `string.Formatter` subclass resolves a format field's dotted path by `getattr` and may call what
  it finds in `format_field` (`Calling().format("{0.upd" + "ate}", t)`: X_04); an annotation string
  built of parts is evaluated by `typing.get_type_hints` (X_05), `inspect.get_annotations` and
  `inspect.signature(eval_str=True)`; `mock.patch.object(t, "upd" + "ate").get_original()` (X_06),
  `mock.patch(target)` and `TestLoader().loadTestsFromName(name)` resolve a computed dotted name.
  Now `introspection._STRING_RESOLVERS` holds `get_type_hints`, `get_annotations`, `eval_str`,
  `ForwardRef` and its evaluators; `_STRING_MODULE_CLASSES` the `string` module's `Formatter` (as an
  attribute of a name bound to that module, or imported from it: not `logging.Formatter`);
  `_NAME_ARGUMENTS` the `unittest` resolvers, only where their name argument is no literal
  (`_name_argument_computed`), so that a test file patching spelled-out names keeps its reach.
- PyYAML's unsafe loaders apply any callable a document names (`yaml.load("!!python/object/apply:
  builtins.eval [...]", Loader=yaml.Loader)` with code built of parts: X_10). Now `unsafe_load`,
  `UnsafeLoader` in `_STRING_RESOLVERS`, `yaml.Loader`/`CLoader` as an attribute or an import of it
  (`_ATTRIBUTE_RESOLVERS`: the keyword `Loader=` names none); not `safe_load`, `SafeLoader`.
- GF005 took a loss made of the caller's losses (`total = sum(losses)`, `(losses[0] + losses[1])`,
  `0.5 * losses[0]`, `losses[0].squeeze()`) for the function's own: `_loss_from_caller` followed
  only forms that select a value as it is. `backward()` takes a one-element tensor, and an
  elementwise form makes one only of one-element operands: each handed-in operand is a loss the
  caller built. Now `_combined_from_caller` follows the elementwise forms (`_operands`: `+`, `-`,
  `*`, `/`, `**`, unary signs, the builtin `sum`/`abs`, shape and cast methods); a reduction
  (`(x * 2).sum()`, `F.mse_loss(out, y)`) still takes a handed-in tensor as data (the README's
  assumption); a term of a sum is followed whatever the other terms (`sum(losses) + reg`), an
  operand of a product only where every operand is the caller's (`own_loss * scale` of a float
  parameter stays the function's own).
X_03 keeps the reach: torch settings stored (`torch.backends.cudnn.benchmark = False`) and an
attribute of a name no call reads as torch's, with `torch.zeros_like(h)` and `h.detach()`. X_07: the
`string` module's constants, `logging.Formatter`, `str.format`, `mock.patch.object` of a literal
name, `typing.get_origin`.
"""
from pathlib import Path

import libcst as cst
import pytest

from tests.test_gf005_caller_loss import _PROGRAM
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round16").glob("X_*.py"))
REACHED = "`update` may be reached by its name as a string ("
PATCHED = "the file binds or stores `{0}`, where gradfix reads `{0}` in a call's text as torch's or a builtin's"

EXPECTED = {
    "X_01_gf003_loop_patched_torch_factory_keeps_graph": ("GF003", PATCHED.format("zeros_like")),
    "X_02_gf003_loop_patched_tensor_detach_keeps_graph": ("GF003", PATCHED.format("detach")),
    "X_03_gf003_loop_torch_settings_stored_near_miss": ("GF003", None),
    "X_04_gf005_string_formatter_field_calls_method": ("GF005", REACHED + "`string.Formatter` at line 23)"),
    "X_05_gf005_get_type_hints_evaluates_built_annotation": ("GF005", REACHED + "`typing.get_type_hints` at line 29)"),
    "X_06_gf005_mock_patch_object_resolves_computed_name": ("GF005", REACHED + '`mock.patch.object(t, "upd" + "ate")` at line 23)'),
    "X_07_gf005_string_module_logging_mock_near_miss": ("GF005", None),
    "X_08_gf003_loop_builtin_float_defined_by_file": ("GF003", PATCHED.format("float")),
    "X_09_gf003_loop_class_item_method_keeps_graph": ("GF003", PATCHED.format("item")),
    "X_10_gf005_yaml_unsafe_loader_runs_method_from_string": ("GF005", REACHED + "`yaml.Loader` at line 24)"),
}

# Programs that patch torch (left patched): run in a process of their own.
APART = {"X_01_gf003_loop_patched_torch_factory_keeps_graph", "X_02_gf003_loop_patched_tensor_detach_keeps_graph"}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


@pytest.mark.parametrize(
    "text, patched",
    [
        ("import torch\ntorch.zeros_like = f\nb = torch.zeros_like(h)\n", "zeros_like"),
        ("import torch\nmod = torch.nn\nmod.Buffer = f\nb = torch.nn.Buffer(h)\n", "Buffer"),
        ("import torch\nsetattr(self, 'Buffer', f)\nb = torch.nn.Buffer(h)\n", "Buffer"),
        ("import torch\ntorch.nn = Fake\nb = torch.nn.Parameter(h)\n", "nn"),
        ("import torch\nT = torch.Tensor\nT.detach = f\n", "detach"),
        ("import torch\nsetattr(obj, name, f)\n", "*"),
        ("import torch\nfrom numpy import *\n", "*"),
        ("import builtins\nbuiltins.nn = Fake\nb = nn.Parameter(h)\n", "*"),
        ("import torch\nself.nn = Fake\nb = nn.Parameter(h)\n", "nn"),
        ("import torch\ndef float(t):\n    return t\n", "float"),
        ("import torch\ndef f():\n    list = g\n", "list"),
        ("import torch\nclass Box:\n    def item(self):\n        return 1\n", "item"),
        # Names no call reads as torch's: settings, a name of no torch call of the file.
        ("import torch\ntorch.backends.cudnn.benchmark = True\nb = torch.zeros(3)\n", None),
        ("import torch\ncfg.scale = 2.0\nself.ones = 1\nb = torch.zeros(3)\n", None),
    ],
)
def test_torch_names_patched(text, patched):
    from gradfix.analysis.loops import torch_names_patched

    assert torch_names_patched(cst.parse_module(text)) == patched


@pytest.mark.parametrize(
    "text, reached",
    [
        ("import string\nclass C(string.Formatter):\n    pass\n", True),
        ("import string as s\nf = s.Formatter()\n", True),
        ("from string import Formatter\n", True),
        ("import string\nx = string.ascii_letters\n", False),
        ("import logging\nf = logging.Formatter('{message}', style='{')\n", False),
        ("import typing\nh = typing.get_type_hints(f)\n", True),
        ("import inspect\ns = inspect.signature(f, eval_str=True)\n", True),
        ("import inspect\ns = inspect.signature(f)\n", False),
        ("from unittest import mock\np = mock.patch.object(t, name)\n", True),
        ("from unittest import mock\np = mock.patch.object(t, attribute=name)\n", True),
        ("from unittest import mock\np = mock.patch('__main__.' + name)\n", True),
        ("from unittest import mock\np = mock.patch.multiple(t, **names)\n", True),
        ("import unittest\ns = unittest.TestLoader().loadTestsFromName(name)\n", True),
        ("from unittest import mock\np = mock.patch.object(t, 'opt')\nq = mock.patch('torch.manual_seed')\n", False),
        ("from unittest import mock\np = mock.patch.multiple(t, opt=1)\n", False),
        ("import yaml\nd = yaml.load(s, Loader=yaml.Loader)\n", True),
        ("from yaml import CLoader\n", True),
        ("import yaml\nd = yaml.unsafe_load(s)\n", True),
        ("import yaml\nd = yaml.load(s, Loader=yaml.SafeLoader)\ne = yaml.safe_load(s)\n", False),
    ],
)
def test_names_reached_by_string_round16(text, reached):
    from gradfix.analysis.introspection import names_reached_by_string

    head = "class T:\n    def update(self):\n        pass\n"
    assert (names_reached_by_string(cst.parse_module(head + text), "update", True) is not None) is reached


# GF005 (review, round 16): a loss made elementwise of the caller's losses keeps the unsafe fix and
# its reason (before, only the reason that the file's caller passes a graph). Without the caller in
# the file (a caller in another file), the fix was safe: `test_combined_loss_unseen_caller`.
_L = ".backward(retain_graph=True)"
_COMBINED_LOSS = {
    "sum": ("        total = sum(losses)\n        total" + _L, "[d]"),
    "sum_plus_own": ("        total = sum(losses) + (self.w * 0).sum()\n        total" + _L, "[d]"),
    "items_added": ("        (losses[0] + losses[1])" + _L, "[d, d]"),
    "scaled": ("        (0.5 * losses[0])" + _L, "[d]"),
    "negated_twice": ("        (-(-losses[0]))" + _L, "[d]"),
    "squeezed": ("        losses[0].squeeze()" + _L, "[d]"),
    "bound_then_added": ("        a, b = losses\n        loss = a + b\n        loss" + _L, "[d, d]"),
}


@pytest.mark.parametrize("name", sorted(_COMBINED_LOSS))
def test_a_loss_combined_from_the_callers_keeps_an_unsafe_fix(tmp_path, name):
    backward, argument = _COMBINED_LOSS[name]
    path = tmp_path / "train.py"
    path.write_text(_PROGRAM.format(header="def update(self, losses):", backward=backward, argument=argument))
    check_case(path, ("GF005", "is the caller's (the parameter `losses`)"))


def test_combined_loss_unseen_caller():
    """The class alone (its caller in another file): the fix was safe, and the caller's program
    run on the fixed class raises where the original prints gradients."""
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions
    from tests.test_review_reproducers import ALL, _run

    program = _PROGRAM.format(header="def update(self, losses):", backward=_COMBINED_LOSS["sum"][0], argument="[d]")
    library, caller = program.split('if __name__ == "__main__":\n')
    findings = lint_bytes(library.encode(), "trainer.py", LintOptions(ALL)).findings
    assert [(f.code, f.fixable) for f in findings] == [("GF005", False)]
    assert "is the caller's (the parameter `losses`)" in findings[0].fix.unsafe_reason
    pytest.importorskip("torch")
    unsafe = lint_bytes(library.encode(), "trainer.py", LintOptions(ALL, fix=True, unsafe_fixes=True)).fixed
    script = "\n".join(line[4:] for line in caller.splitlines())
    assert not _run(library + script).startswith("raised")
    assert _run(unsafe.decode() + script).startswith("raised")


@pytest.mark.parametrize(
    "backward",
    [
        "        loss = (self.w * losses[0]).sum()\n        loss" + _L,  # a reduction: data, as the README takes it
        "        loss = torch.nn.functional.mse_loss(self.w, losses[0])\n        loss" + _L,
        "        loss = (self.w ** 2).sum() * losses[0][0]\n        loss" + _L,  # an own loss scaled
    ],
)
def test_a_loss_reduced_from_a_handed_in_tensor_keeps_its_safe_fix(tmp_path, backward):
    path = tmp_path / "train.py"
    path.write_text(
        _PROGRAM.format(header="def update(self, losses):", backward=backward, argument="[torch.ones(3)]")
        .replace("    g = (h * 3).sum()\n    g.backward()\n", "")
    )
    check_case(path, ("GF005", None))
