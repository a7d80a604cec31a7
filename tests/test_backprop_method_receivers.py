"""A backpropagating method of the file counts when called later by its name on any receiver
(review, round 4: `make().finish()`, `Fin.finish()`, `fins[0].finish()`), except on `self.X` where
every store into `X` in the file is a torch optimizer, module or scaler constructor: the common
trainer whose own `step` backpropagates and then calls `self.opt.step()` keeps its safe merge.
"""

from __future__ import annotations

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

TRAINER = """import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.net = nn.Linear(4, 1)
        self.opt = {opt}

    def step(self, x, y):
        self.opt.zero_grad()
        out = self.net(x)
        l1 = ((out - y) ** 2).mean()
        l2 = out.abs().mean()
        l1.backward(retain_graph=True)
        l2.backward()
        self.opt.step()
{extra}"""


def gf003(source: str):
    findings = lint_bytes(source.encode(), "train.py", LintOptions(("GF003",))).findings
    assert [f.code for f in findings] == ["GF003"]
    return findings[0].fix


def test_a_torch_optimizer_attribute_is_no_backpropagating_method():
    fix = gf003(TRAINER.format(opt="torch.optim.SGD(self.net.parameters(), lr=0.1)", extra=""))
    assert fix.safe, fix.unsafe_reason


@pytest.mark.parametrize(
    "opt, extra",
    [
        ("Trainer()", ""),  # an instance of the file's class: its `step` backpropagates
        ("make()", "\n\ndef make():\n    return torch.optim.SGD([], lr=0.1)\n"),  # not a torch constructor
        ("torch.optim.SGD(self.net.parameters(), lr=0.1)", "\n\ndef swap(t, o):\n    t.opt = o\n"),  # stored elsewhere
        ("torch.optim.SGD(self.net.parameters(), lr=0.1)", "\n\ndef swap(t, o):\n    setattr(t, 'opt', o)\n"),
    ],
)
def test_other_receivers_of_a_backpropagating_method_name_count(opt, extra):
    fix = gf003(TRAINER.format(opt=opt, extra=extra))
    assert not fix.safe
    assert "a later `self.opt.step()` (line 17)" in fix.unsafe_reason
