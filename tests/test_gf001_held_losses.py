"""GF001 with losses held in a dict item or an attribute (issue 12).

`losses["adv"] = ...; losses["adv"].backward(retain_graph=True)` and
`self.loss_G = ...; self.loss_G.backward(...)` are the same pattern as named losses. The
rewrite rebuilds each held loss as the detached value of the one evaluation; other code (a
logger, the caller, another method) may read it as a tensor, and that cannot be seen from the
function, so the fix is always unsafe. Executed, it is exact where nothing does.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _unsafe_fix_is_exact

DICT = '''\
import torch
import torch.nn.functional as F

torch.manual_seed(0)
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
log = {}


def step():
    losses = {}
    losses["adv"] = F.mse_loss(a.detach(), b)
    losses["adv"].backward(retain_graph=True)
    losses["cls"] = -0.5 * F.mse_loss(a, b.detach())
    losses["cls"].backward()
    log.update({k: v.item() for k, v in losses.items()})
'''

ATTRIBUTE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Trainer:
    def __init__(self):
        self.enc = nn.Linear(3, 3)
        self.head = nn.Linear(3, 3)
        self.x = torch.randn(4, 3)

    def train_step(self):
        z = self.enc(self.x)
        h = self.head(self.x)
        self.loss_align = F.l1_loss(z.detach(), h)
        self.loss_align.backward(retain_graph=True)
        self.loss_commit = 0.25 * F.l1_loss(z, h.detach())
        self.loss_commit.backward()


trainer = Trainer()


def step():
    trainer.train_step()
'''


def test_dict_items():
    result = _lint(DICT, ["GF001"], unsafe=True)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(14, 28, False)]
    assert (
        '`losses["adv"]` is an item of `losses`, which code gradfix does not see may read as a tensor: '
        "after the rewrite it holds a detached value"
    ) in result.findings[0].message
    assert result.fixed.decode().endswith(
        "    losses = {}\n"
        "    adv_cls = F.mse_loss(grad_scale(a, -0.5), b)\n"
        '    losses["adv"] = adv_cls.detach().clone()\n'
        '    losses["cls"] = -0.5 * adv_cls.detach()\n'
        "    adv_cls.backward()\n"
        "    log.update({k: v.item() for k, v in losses.items()})\n"
    )
    assert _lint(DICT, ["GF001"]).fixed is None  # never applied as safe
    _unsafe_fix_is_exact(DICT, ["GF001"])


def test_attributes():
    result = _lint(ATTRIBUTE, ["GF001"], unsafe=True)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(19, 35, False)]
    assert "`self.loss_align` is an attribute" in result.findings[0].message
    assert (
        "        loss_align_loss_commit = F.l1_loss(grad_scale(z, 0.25), h)\n"
        "        self.loss_align = loss_align_loss_commit.detach().clone()\n"
        "        self.loss_commit = 0.25 * loss_align_loss_commit.detach()\n"
        "        loss_align_loss_commit.backward()\n"
    ) in result.fixed.decode()
    _unsafe_fix_is_exact(ATTRIBUTE, ["GF001"])


@pytest.mark.parametrize(
    "old,new",
    [
        # another item stored between the definition and its backward
        ('    losses["adv"].backward(retain_graph=True)\n', '    losses["tmp"] = 0.0\n    losses["adv"].backward(retain_graph=True)\n'),
        # the dict rebound between
        ('    losses["adv"].backward(retain_graph=True)\n', '    losses = dict(losses)\n    losses["adv"].backward(retain_graph=True)\n'),
        # a computed key: not a literal
        ('    losses["adv"] = F.mse_loss(a.detach(), b)\n    losses["adv"].backward(retain_graph=True)\n',
         '    key = "adv"\n    losses[key] = F.mse_loss(a.detach(), b)\n    losses[key].backward(retain_graph=True)\n'),
    ],
    ids=["other_item_stored", "dict_rebound", "computed_key"],
)
def test_what_hides_the_definition_keeps_it_out(old, new):
    assert old in DICT
    src = DICT.replace(old, new)
    assert _lint(src, ["GF001"], unsafe=True).findings == []
