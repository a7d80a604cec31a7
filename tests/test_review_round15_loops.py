"""Review round 15 (reviewer X, loops and GF005): what round 14's proofs still missed.

Causes:
- GF005's reach of a method by a string knew `_STRING_RESOLVERS` (eval, exec, `resolve_name`,
  `locate`, `get_field`, `getattr_static`) and `_CODE_RUNNER_MODULES` (timeit and its kin), but the
  standard library has more: a code object made from a string and run by `types.FunctionType`
  without `eval`/`exec` (`FunctionType(compile("t.upd" + "ate(h)", ...), ns)`: X_01); a dotted
  attribute resolved from a computed string by `xmlrpc.server.resolve_dotted_attribute` (X_02) and by
  `logging.config`'s configurators (`BaseConfigurator({}).resolve("__main__.t.upd" + "ate")`: X_03);
  `pickle.loads` of bytes built of parts, whose protocol-4 GLOBAL resolves `t.update` (X_04); and
  with no string at all, `gc.get_referents(type(t))`, which hands back the class's namespace dict
  (X_05); `pydoc.allmethods(type(t))`, a dict of a class's methods by name (X_11). Now `introspection._STRING_RESOLVERS` holds those names (with `CodeType`, `__code__`,
  `dictConfig`, `get_objects`, `get_referrers`), `_BUILTIN_RESOLVERS` the builtin `compile` as a name
  (not `re.compile`/`torch.compile`), and `_CODE_RUNNER_MODULES` the modules that resolve dotted
  globals named in their data (`pickle`, `copyreg`, `shelve`, `marshal`, `dill`, `cloudpickle`,
  `xmlrpc`, `logging.config`; `pydoc`, `cmd`), `_CLASS_NAMESPACES` `allmethods`, matched by `_imports_module` also under a dotted name
  (`import logging.config`, `from logging import config`).
- `_plain_tensor` took `.to()`/`.float()` of any receiver for a tensor, whose reads as an operand
  make a new value; a `PackedSequence`'s `.to("cpu")` is that object, a tuple (`buf + ()` holds the
  same tensors: X_07); so is a module's `.float()`. Now `loops._copy_of_object`: a copy method's
  receiver that is, or a name bound to, a torch object or a container makes the value an object's,
  judged by `_only_read`, in `loop_reasons` and `_names_graph_free`.
- `_tensor_read` followed a read past a step that no root walk crosses (a gathering operator
  `bufs + []`, an item of a display, `list(bufs)`, a torch module's result `ident(buf)`), then took
  an in-place method or a store there for one `_inplace_updates`/`stores_into_objects` report; but
  they root `(bufs + [])[0].copy_(h)` at no name (X_08) and `ident(buf).copy_(h)` at `ident` (X_09).
  Now past such a step (`gathered`) a write is no harmless read.
- `graph_free` (and `_torch_object`, `_plain_tensor`, `_class_graph_free`) read a call as torch's by
  its text (`nn.Parameter(h)` detaches) without checking the root is bound to torch: `nn =
  types.SimpleNamespace(Parameter=lambda t: t * 1)` (X_12). Now `loops.torch_roots_rebound`: a
  binding of `torch`, `nn`, `optim` or `F` other than an import of that torch module (or a star
  import) makes `loop_reasons` unsafe.
X_06 keeps the reach: strings built of parts given to `logging`, `re.compile` and `str.format`, and
`torch.compile` mentioned. X_10: `(bufs + [])[0].sum()`, `ident(buf).mean()`, `x.float() + 1` of a
tensor. X_13: `nn`, `optim`, `F` imported from torch.
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.introspection import _CODE_RUNNER_MODULES, _imports_module, names_reached_by_string
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round15").glob("X_*.py"))
REACHED = "`update` may be reached by its name as a string ("
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"
CONTAINER = "is a container the function hands on (to another name or a call) before the loop reads it"
OBJECT = "is an object the function hands on (to another name or a call that may store into it) before the loop reads it"

EXPECTED = {
    "X_01_gf005_compile_function_type_runs_method_from_string": ("GF005", REACHED + "`types.FunctionType` at line 22)"),
    "X_02_gf005_xmlrpc_resolve_dotted_attribute_reaches_method": ("GF005", REACHED + "`from xmlrpc.server import resolve_dot"),
    "X_03_gf005_logging_config_resolve_reaches_method": ("GF005", REACHED + "`import logging.config` at line 21)"),
    "X_04_gf005_pickle_global_reaches_method": ("GF005", REACHED + "`import pickle` at line 21)"),
    "X_05_gf005_gc_referents_reach_method": ("GF005", REACHED + "`gc.get_referents` at line 22)"),
    "X_06_gf005_logging_regex_format_strings_near_miss": ("GF005", None),
    "X_07_gf003_loop_packed_sequence_to_taken_for_tensor": ("GF003", "`buf` (line 11) " + OBJECT),
    "X_08_gf003_loop_write_through_gathered_container": ("GF003", "`bufs` (line 10) " + CONTAINER),
    "X_09_gf003_loop_identity_result_written_in_place": ("GF003", "`buf` (line 11) " + TENSOR),
    "X_10_gf003_loop_gathered_reads_near_miss": ("GF003", None),
    "X_11_gf005_pydoc_allmethods_reaches_method": ("GF005", REACHED + "`import pydoc` at line 21)"),
    "X_12_gf003_loop_nn_bound_to_namespace": ("GF003", "`nn =` (line 7) binds a name gradfix reads as torch's"),
    "X_13_gf003_loop_torch_roots_imported_near_miss": ("GF003", None),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _import(text):
    return cst.parse_module(text).body[0].body[0]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("import logging.config", True),
        ("from logging import config", True),
        ("from logging.config import dictConfig", True),
        ("import pickle as pk", True),
        ("from xmlrpc.server import resolve_dotted_attribute", True),
        ("import logging", False),
        ("from logging import getLogger", False),
        ("from . import pickle", False),
        ("import pickletools", False),
    ],
)
def test_imports_module(text, expected):
    assert _imports_module(_import(text), _CODE_RUNNER_MODULES) is expected


def test_builtin_compile_only_as_a_name():
    head = "class T:\n    def update(self):\n        pass\n"
    for text, reached in [
        ("c = compile(s, 'f', 'eval')\n", True),
        ("import builtins\nc = builtins.compile(s, 'f', 'eval')\n", True),
        ("import re\nc = re.compile(s)\n", False),
        ("import torch\nc = torch.compile(f)\n", False),
    ]:
        node = names_reached_by_string(cst.parse_module(head + text), "update", True)
        assert (node is not None) is reached, text


def test_copy_of_object():
    from gradfix.analysis.loops import _copy_of_object

    bound = {
        "packed": [cst.parse_expression("torch.nn.utils.rnn.PackedSequence(torch.zeros(3), torch.tensor([3]))")],
        "model": [cst.parse_expression("nn.Linear(3, 3)")],
        "moved": [cst.parse_expression("model.to('cpu')")],
        "rows": [cst.parse_expression("[torch.zeros(3)]")],
        "x": [cst.parse_expression("torch.zeros(3)")],
    }

    def lookup(name):
        return bound.get(name, [])

    for text, expected in [
        ("packed.to('cpu')", True),
        ("model.float()", True),
        ("moved.cuda()", True),
        ("rows.float()", True),
        ("nn.Linear(3, 3).float()", True),
        ("x.float()", False),
        ("torch.zeros(3).to('cpu')", False),
        ("y.float()", False),
        ("packed.sum()", False),
    ]:
        assert _copy_of_object(cst.parse_expression(text), lookup) is expected, text


@pytest.mark.parametrize(
    "text, rebound",
    [
        ("import torch\nimport torch.nn as nn\nfrom torch import optim\nimport torch.nn.functional as F\n", False),
        ("import torch.nn\nfrom torch.nn import functional as F\n", False),
        ("import numpy as torch\n", True),
        ("from mylib import nn\n", True),
        ("from torch.nn import functional as nn\n", True),
        ("from numpy import *\n", True),
        ("import torch\ndef f(F):\n    return F\n", True),
        ("import torch\nfor optim in []:\n    pass\n", True),
        ("import torch\nfn = 1\n", False),
    ],
)
def test_torch_roots_rebound(text, rebound):
    from gradfix.analysis.loops import torch_roots_rebound

    assert (torch_roots_rebound(cst.parse_module(text)) is not None) is rebound
