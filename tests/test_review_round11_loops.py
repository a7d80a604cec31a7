"""Review round 11 (reviewer P, loops): what round 10's proofs of operators still missed.

Causes:
- Round 10 proved operators (and with them fresh tensor methods and torch calls) where every module
  the file imports is one of `loops._OPERAND_MODULES`. But a module is reached by more than its
  import: an allowed module's attribute may be another module (`typing.collections.UserList() +
  buf` holds `list(buf)`, views of `buf`'s rows: P_01), and a package allowed whole holds
  submodules whose classes keep an operand (`torch.utils.data.TensorDataset(x) + buf` is a
  `ConcatDataset` holding `buf`, with `import torch` alone: P_02). Now every path the file reaches
  from an import (the import's path, each attribute chain rooted at a name it binds) must be proven
  (`loops._module_paths_proven`, `_path_proven`): public names only, no standard module's name
  outside `_OPERAND_MODULES`, and of torch and numpy only the submodules `_PROVEN_SUBMODULES`
  lists (by `_PACKAGE_SUBMODULES`); a module object read other than as a chain's root proves nothing.
- The special methods that get an operand were proven absent from the names the file binds (`def`,
  class-body bindings, attribute stores), but a class made from a namespace mapping binds them by
  a dict key: a metaclass of the file called (P_03), `dataclasses.make_dataclass(namespace=...)`
  (P_04), `type.__new__(type, name, bases, ns)` (P_05; only `type(name, bases, ns)` was caught).
  Now `loops._classes_made_unseen` proves operators only where `type` is used only as `type(x)`,
  compared, printed or read for its name (or as `isinstance`'s class), and no `__class__`,
  `__new__`, `__prepare__`, `make_dataclass`, `new_class` or class keyword (`metaclass=`) appears.
- numpy's operators hand their operands to hooks of an operand's class that
  `_OPERAND_DUNDERS` did not list: `__array_ufunc__` of an `NDArrayOperatorsMixin` (P_06) or of an
  `np.ndarray` subclass with a higher `__array_priority__` (P_07) returns `buf`. Now numpy's
  hooks (`__array_ufunc__`, `__array_function__`, `__array_wrap__`, `__array_prepare__`,
  `__array_finalize__`, `__array__`) are among them.
- A module object handed on reaches library code that sets its attributes by strings, which
  `introspection.bound_attribute_names` does not see: `logging.config.dictConfig` sets the `"."`
  mapping's names on what a `"()"` factory returns (`lambda: F.torch`: P_09); `copy.copy` updates
  the `__dict__` of what a `__reduce__` callable returns with its state (P_10). `F.torch` is torch
  reached as an attribute. Now a module reached as an attribute (`_names_module`) or bound by an
  import (`from torch import nn`) proves nothing where it is read other than as a chain's root or
  called, and `logging.config` is no proven submodule (`_PACKAGE_SUBMODULES`).
P_08 keeps the reach: `os.path`, `typing.Optional`, `torch.nn.functional`, `torch.nn.init`,
`np.random`, `type(x) == C`, `type(x).__name__`, `isinstance(C, type)`.
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round11").glob("P_*.py"))
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"

EXPECTED = {
    "P_01_gf003_loop_operator_of_module_reached_through_allowed_module": ("GF003", "`buf` (line 11) " + TENSOR),
    "P_02_gf003_loop_operator_of_torch_dataset_keeps_operand": ("GF003", "`buf` (line 10) " + TENSOR),
    "P_03_gf003_loop_operator_of_class_made_by_metaclass_call": ("GF003", "`buf` (line 18) " + TENSOR),
    "P_04_gf003_loop_operator_of_make_dataclass_namespace": ("GF003", "`buf` (line 14) " + TENSOR),
    "P_05_gf003_loop_operator_of_class_made_by_type_new": ("GF003", "`buf` (line 13) " + TENSOR),
    "P_06_gf003_loop_numpy_mixin_array_ufunc_returns_operand": ("GF003", "`buf` (line 17) " + TENSOR),
    "P_07_gf003_loop_ndarray_subclass_array_ufunc_returns_operand": ("GF003", "`buf` (line 18) " + TENSOR),
    "P_08_gf003_loop_allowed_module_paths_keep_safe_fix": ("GF003", None),
    "P_09_gf003_loop_torch_patched_by_logging_dictconfig": ("GF003", "`buf` (line 17) " + TENSOR),
    "P_10_gf003_loop_torch_patched_by_copy_reduce_state": ("GF003", "`buf` (line 18) " + TENSOR),
}

# Programs that patch torch (left patched): run in a process of their own.
APART = {"P_09_gf003_loop_torch_patched_by_logging_dictconfig", "P_10_gf003_loop_torch_patched_by_copy_reduce_state"}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def _operators(source):
    import libcst as cst

    from gradfix.analysis.loops import _shadowed_builtins

    return _shadowed_builtins(cst.parse_module(source)).operators


def test_module_paths_must_be_proven():
    base = "import torch\nimport numpy as np\nimport os\nimport typing\n"
    assert _operators(base + "a = os.path.join('a')\nb = torch.nn.functional.relu\nc = np.random.rand\nd = typing.Optional\ne = torch.__version__\nf = np.random.random(3)\nimport time\ng = time.time()\n")
    for extra in (
        "u = typing.collections\n",  # a standard module, attribute of an allowed one
        "import torch.utils.data\n",
        "from torch.utils.data import DataLoader\n",
        "from torch import fx\n",
        "d = torch.utils.data.TensorDataset\n",
        "m = np.lib.mixins\n",
        "a = np.ma.array\n",
        "p = os._wrap_close\n",  # private
        "u = torch\n",  # the module object handed on
        "from typing import types\n",
        "f = lambda: torch.nn.functional.torch\n",  # a module reached as an attribute, handed on
        "from torch import nn\nm = nn\n",
        "import logging.config\n",
    ):
        assert not _operators(base + extra), extra


def test_classes_made_from_a_namespace():
    base = "import torch\n"
    assert _operators(base + "def f(x):\n    print(type(x), type(x).__name__, type(x) == int, isinstance(x, type))\n    return f'{type(x)}'\n")
    for extra in (
        "K = type.__new__(type, 'K', (), {})\n",
        "class M(type):\n    pass\n",
        "T = type(int)\n",
        "K = type(int)('K', (), {})\n",
        "K = int.__class__('K', (), {})\n",
        "K = getattr(int, '__class__')\n",
        "import dataclasses\nK = dataclasses.make_dataclass('K', [])\n",
        "class K(Base, metaclass=M):\n    pass\n",
    ):
        assert not _operators(base + extra), extra


def test_numpy_hooks_are_operand_dunders():
    assert not _operators("import numpy as np\nclass K(np.ndarray):\n    def __array_ufunc__(self, *a, **k):\n        return a[2]\n")
    assert not _operators("import numpy as np\nclass K:\n    __array_function__ = None\n")
