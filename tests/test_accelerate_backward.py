"""Accelerate's `accelerator.backward(loss, ...)` as a backward spelling.

`Accelerator.backward(loss, **kwargs)` divides the loss by the gradient-accumulation steps and
calls `loss.backward(**kwargs)` (or the scaler's, DeepSpeed's engine's, or nothing under
Megatron-LM). gradfix reads it as a backward of `loss` only where the file proves the receiver an
`accelerate.Accelerator`: every binding of the name is `name = Accelerator(...)` with `Accelerator`
imported from `accelerate`. GF005 drops a needless `retain_graph=True` from it (the keyword only
decides when the graph is freed, on every path), with an unsafe fix: that nothing patches the
receiver's `backward` or binds the name where the call reads it is not proven (review, stop 21:
`Acc = Accelerator; Acc.backward = f`, `builtins.accelerator = ...`). Merges of two calls (GF001,
GF003, GF004) are never safe: under DeepSpeed each call also steps the optimizer.

The executed checks run against accelerate where it is installed, else against a stub of its
default (single-process, no mixed precision) path, which is what a CPU run of the real one takes.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest

from gradfix.engine import lint_bytes, prefilter, rule_modules
from gradfix.options import LintOptions

STUB = '''
class Accelerator:
    """accelerate 1.15's `Accelerator.backward` on its default path (no DeepSpeed, Megatron-LM,
    scaler or LOMO optimizer)."""

    def __init__(self, gradient_accumulation_steps=1, **kwargs):
        self.gradient_accumulation_steps = gradient_accumulation_steps

    def prepare(self, *args):
        return args[0] if len(args) == 1 else args

    def backward(self, loss, **kwargs):
        loss = loss / self.gradient_accumulation_steps
        loss.backward(**kwargs)
'''


@pytest.fixture(params=["stub", "accelerate"])
def accelerate_module(request, monkeypatch):
    if request.param == "accelerate":
        if importlib.util.find_spec("accelerate") is None:
            pytest.skip("accelerate is not installed")
        return None
    module = types.ModuleType("accelerate")
    exec(STUB, module.__dict__)
    monkeypatch.setitem(sys.modules, "accelerate", module)
    return module


TRAIN = '''\
import torch
import torch.nn as nn
from accelerate import Accelerator

torch.manual_seed(0)
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]


def train():
    accelerator = Accelerator(gradient_accumulation_steps=2)
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in data:
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        accelerator.backward(loss, retain_graph=True)
        opt.step()
    return net


def step():
    return train()
'''

MERGE = '''\
import torch
import torch.nn as nn
import accelerate

torch.manual_seed(0)
enc = nn.Linear(6, 4)
batch = torch.randn(5, 6)
accelerator = accelerate.Accelerator()


def step():
    h = enc(batch)
    rec = (h ** 2).mean()
    reg = h.abs().mean()
    accelerator.backward(rec, retain_graph=True)
    accelerator.backward(reg)
'''

DEEPSPEED = (
    "`accelerator.backward(...)` steps the optimizer after each call under DeepSpeed (a launch setting gradfix "
    "cannot see): one call instead of two would step once"
)


def _lint(src: str, codes, **flags):
    result = lint_bytes(src.encode(), "train.py", LintOptions(tuple(codes), **flags))
    assert result.error is None, result.error
    return result


def _same(src: str, fixed: str) -> None:
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, fixed, filename="train.py", device="cpu", repeat=0)
    assert report.error is None, report.error
    bad = [f"{r.path} {r.what}: abs {r.max_abs}" for r in report.rows if not r.ok]
    assert report.rows and not bad, bad


PATCHABLE = "`accelerator.backward` is taken to be accelerate's `Accelerator.backward` from its bindings in the file; that nothing patches it or binds the name elsewhere is not proven"


def test_gf005_drops_a_needless_retain_graph_from_accelerator_backward(accelerate_module):
    (finding,) = _lint(TRAIN, ["GF005"]).findings
    assert (finding.code, finding.line, finding.col, finding.fixable) == ("GF005", 16, 36, False), finding.message
    assert finding.fix.unsafe_reason == PATCHABLE
    assert _lint(TRAIN, ["GF005"], fix=True).fixed is None
    fixed = _lint(TRAIN, ["GF005"], fix=True, unsafe_fixes=True).fixed.decode()
    assert fixed == TRAIN.replace("accelerator.backward(loss, retain_graph=True)", "accelerator.backward(loss)")
    _same(TRAIN, fixed)


def test_merging_accelerator_backward_calls_is_never_safe(accelerate_module):
    (finding,) = _lint(MERGE, ["GF003"]).findings
    assert (finding.line, finding.col, finding.fixable) == (15, 5, False)
    assert DEEPSPEED in finding.fix.unsafe_reason
    fixed = _lint(MERGE, ["GF003"], fix=True, unsafe_fixes=True).fixed.decode()
    assert fixed == MERGE.replace(
        "    accelerator.backward(rec, retain_graph=True)\n    accelerator.backward(reg)\n", "    accelerator.backward(rec + reg)\n"
    )
    # Exact on the default path (what a CPU run takes); not under DeepSpeed, hence unsafe.
    _same(MERGE, fixed)


def test_gf001_seed_with_accelerator_backward_is_unsafe(accelerate_module):
    src = '''\
import torch
import torch.nn as nn
from accelerate import Accelerator

torch.manual_seed(0)
head_x = nn.Linear(6, 4)
head_y = nn.Linear(6, 4)
batch = torch.randn(5, 6)
accelerator = Accelerator()


def f(u, v):
    return ((u - v) ** 2).mean()


def step():
    x = head_x(batch)
    y = head_y(batch)
    l1 = f(x.detach(), y)
    accelerator.backward(l1, retain_graph=True)
    l2 = -1 * f(x, y.detach())
    accelerator.backward(l2)
'''
    (finding,) = _lint(src, ["GF001"]).findings
    assert (finding.line, finding.col, finding.fixable) == (21, 15, False)
    assert DEEPSPEED in finding.fix.unsafe_reason
    fixed = _lint(src, ["GF001"], fix=True, unsafe_fixes=True).fixed.decode()
    assert "    l1 = f(grad_scale(x, -1.0), y)\n    accelerator.backward(l1)\n" in fixed
    _same(src, fixed)


@pytest.mark.parametrize(
    "old,new",
    [
        # a parameter: whatever the caller passes
        ("def train():\n    accelerator = Accelerator(gradient_accumulation_steps=2)\n", "def train(accelerator):\n"),
        # bound to something else too
        ("    return net\n", "    accelerator = make()\n    return net\n"),
        # `Accelerator` rebound
        ("torch.manual_seed(0)\n", "torch.manual_seed(0)\nAccelerator = dict\n"),
        # not accelerate's
        ("from accelerate import Accelerator\n", "from lightning.fabric.accelerators import Accelerator\n"),
        # names bound by their strings
        ("torch.manual_seed(0)\n", "torch.manual_seed(0)\nglobals()['x'] = 1\n"),
    ],
    ids=["parameter", "other_binding", "class_rebound", "other_library", "globals"],
)
def test_an_unproven_receiver_is_no_backward_site(old, new):
    assert old in TRAIN
    src = TRAIN.replace(old, new).replace("    return train()\n", "    return train(Accelerator())\n" if "train(accelerator)" in new else "    return train()\n")
    assert _lint(src, ["GF005"]).findings == []


def test_import_spellings_prove_the_receiver():
    aliased = TRAIN.replace("from accelerate import Accelerator\n", "from accelerate import Accelerator as Acc\n").replace(
        "Accelerator(gradient", "Acc(gradient"
    )
    module = TRAIN.replace("from accelerate import Accelerator\n", "import accelerate as acc\n").replace(
        "Accelerator(gradient", "acc.Accelerator(gradient"
    )
    for src in (aliased, module):
        assert [(f.line, f.fix.unsafe_reason) for f in _lint(src, ["GF005"]).findings] == [(16, PATCHABLE)]


def test_the_prefilter_keeps_a_file_with_only_accelerator_backward():
    assert prefilter(TRAIN.encode(), rule_modules(["GF005"]))
    assert prefilter(MERGE.encode(), rule_modules(["GF003"]))


@pytest.mark.parametrize(
    "patch",
    ["accelerator.backward = print", "Accelerator.backward = print", "setattr(accelerator, 'backward', print)", "accelerate.backward = 1"],
)
def test_a_patched_accelerator_is_not_proven(patch):
    src = TRAIN.replace("    opt = torch.optim.SGD(", f"    {patch}\n    opt = torch.optim.SGD(")
    if patch.startswith("accelerate."):
        src = src.replace("from accelerate import Accelerator\n", "import accelerate\n").replace("Accelerator(gradient", "accelerate.Accelerator(gradient")
    assert _lint(src, ["GF005"]).findings == []
