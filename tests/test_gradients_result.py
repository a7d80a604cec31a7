"""The result of `torch.autograd.grad(...)` is a tuple of tensors, not a way to backpropagate.

Review round 7 made every reference to a way to backpropagate a use of one; a name bound to a value
that mentions `.grad` counted as such a way, so `gradients = torch.autograd.grad(loss, params)`
followed by `for g in gradients` made the file's merges unsafe (the field's GradNorm loop). A call of
torch's `torch.autograd.grad`, through names bound only by imports of torch, with no attribute of a
torch module stored in the file and no way to backpropagate in its arguments, now binds no alias
(`Backpropagators._gradients_of_call`); the call is still a backward site of its own.
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.backward import Backpropagators
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "gradients_result").glob("*.py"))
EXPECTED = {"P_01_gf003_gradients_tuple_iterated_keeps_safe_fix": ("GF003", None)}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _aliases(source: str):
    return Backpropagators(cst.parse_module(source)).aliases


@pytest.mark.parametrize("source", [
    "import torch\ngs = torch.autograd.grad(l, w)\n",
    "from torch import autograd\ngs = autograd.grad(l, [w], create_graph=True)\n",
    "from torch.autograd import grad as G\ngs = G(l, w)\n",
])
def test_a_call_of_torch_autograd_grad_binds_no_alias(source):
    assert "gs" not in _aliases(source)


@pytest.mark.parametrize("source", [
    "import torch\ngs = torch.autograd.grad\n",  # the function itself
    "import torch\ngs = (lambda: torch.autograd.grad(l, w))\n",  # a way to call it later
    "class A:\n    def grad(self, l, w):\n        return l.backward\ngs = A().grad(l, w)\n",  # the file's own `grad`
    "import torch\ntorch.autograd.grad = lambda *a: a[0].backward\ngs = torch.autograd.grad(l, w)\n",  # patched
    "import torch\nimport torch as T\nT = other\ngs = T.autograd.grad(l, w)\n",  # `T` bound otherwise too
    "import torch\nbw = l.backward\ngs = torch.autograd.grad(l, w, grad_outputs=bw)\n",  # an argument that is one
    "import torch\ngs = torch.autograd.grad(l, w)[0].backward\n",  # no call: a method of its result
])
def test_anything_else_still_binds_an_alias(source):
    assert "gs" in _aliases(source)
