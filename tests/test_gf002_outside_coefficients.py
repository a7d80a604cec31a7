"""GF002 with a coefficient bound outside the file (stop 35).

Two held-out corpora of VQ-VAE code (`self.beta`, `self.commitment_cost`, `args.beta`): 19 of
their 26 GF002 findings were unsafe for one reason, "coefficient is not a number". A coefficient
the file binds only to numbers or to what a caller passes is now taken to be a number or a
one-element tensor (README, "What a safe fix assumes about other files"), and the rewrite's
correction multiplies it by the detached evaluation, so a coefficient that requires grad keeps
its gradient. Each case below is executed against the original: a float, a 0-dim tensor that
requires grad, a one-element tensor, numpy's float32. A tensor of several elements (outside the
assumption) makes the rewrite raise, never give other numbers. A coefficient the file binds to
anything else, one a class computes, and one rebound between the one evaluation and the sum keep
the fix unsafe.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

VQ = """\
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class VectorQuantizer(nn.Module):
    def __init__(self, num_codes, dim, beta=0.25):
        super().__init__()
        self.beta = beta
        self.codebook = nn.Embedding(num_codes, dim)
        self.codebook.weight.data.uniform_(-1.0 / num_codes, 1.0 / num_codes)
{EXTRA}
    def forward(self, z_e):
        codes = torch.cdist(z_e, self.codebook.weight).argmin(1)
        z_q = self.codebook(codes)
        loss = {SUM}
        return z_e + (z_q - z_e).detach(), loss


BETA = {BETA}
encoder = nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 8))
quantizer = VectorQuantizer(32, 8, beta=BETA)
decoder = nn.Linear(8, 24)
batch = torch.randn(16, 24)
z_q, vq_loss = quantizer(encoder(batch))
loss = F.mse_loss(decoder(z_q), batch) + vq_loss.sum()
loss.backward()
"""

SUM = "F.mse_loss(z_q, z_e.detach()) + self.beta * F.mse_loss(z_q.detach(), z_e)"


def _src(beta: str, terms: str = SUM, extra: str = "") -> str:
    return VQ.replace("{BETA}", beta).replace("{SUM}", terms).replace("{EXTRA}", extra)


@pytest.mark.parametrize(
    "beta",
    ["0.25", "2", "torch.tensor(0.25, requires_grad=True)", "torch.tensor([0.25])", "np.float32(0.25)", "torch.tensor(0.5, dtype=torch.float64)"],
)
def test_a_caller_s_coefficient_is_safe_and_exact(beta):
    src = _src(beta)
    result = _lint(src, ["GF002"])
    assert [(f.code, f.line, f.col, f.fixable) for f in result.findings] == [("GF002", 17, 60, True)]
    fixed = result.fixed.decode()
    assert "loss_term = F.mse_loss(z_q, grad_scale(z_e, self.beta))\n        loss = loss_term + self.beta * loss_term.detach()\n" in fixed
    _safe_fix_is_exact(src, ["GF002"])


def test_a_coefficient_that_requires_grad_keeps_its_gradient():
    """The gradient the original gives `BETA` (the commitment term's value) after the rewrite too,
    compared by the harness above; here by hand, against the old correction's zero."""
    torch = pytest.importorskip("torch")
    src = _src("torch.tensor(0.25, requires_grad=True)")
    grads = []
    for code in (src, _lint(src, ["GF002"]).fixed.decode()):
        scope: dict = {}
        torch.manual_seed(0)
        exec(compile(code, "train.py", "exec"), scope)
        grads.append(scope["BETA"].grad)
    assert grads[0] is not None and grads[1] is not None
    assert torch.allclose(grads[0], grads[1]) and grads[0].item() > 0


def test_a_tensor_of_several_elements_the_file_passes_makes_the_fix_unsafe():
    """Outside the assumption, and shown by the file (stop 36): the original broadcasts `self.beta
    * mse` to two values. The fix is unsafe, naming the call; applied anyway, the rewrite's
    `grad_scale` refuses the scale, loudly (ValueError), never other gradients."""
    harness = pytest.importorskip("gradfix.harness")
    src = _src("torch.tensor([0.25, 0.5])")
    assert _lint(src, ["GF002"]).fixed is None
    result = _lint(src, ["GF002"], unsafe=True)
    assert [(f.fix.safe, f.fix.unsafe_reason) for f in result.findings] == [
        (False, "coefficient `self.beta` is passed `BETA` as `beta` (line 23): gradfix cannot prove it a number or a one-element tensor")
    ]
    report = harness.verify_pair(src, result.fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is not None and "one-element tensor" in report.error


@pytest.mark.parametrize(
    "extra, terms, reason",
    [
        # The file binds the attribute to a tensor of its own making.
        ("    def widen(self, dim):\n        self.beta = torch.full((dim,), 0.25)\n", SUM,
         "coefficient `self.beta` is bound to `self.beta = torch.full((dim,), 0.25)` (line 14): gradfix cannot prove it a number or a one-element tensor"),
        # A class of the file computes `beta` on each read.
        ("    @property\n    def gain(self):\n        return torch.ones(3)\n", SUM.replace("self.beta", "self.gain"),
         "coefficient `self.gain` may be computed anew on each read"),
        # Bound by `setattr` with a computed name.
        ("    def set(self, name, value):\n        setattr(self, name, value)\n", SUM,
         "coefficient `self.beta` may be bound by a computed name"),
        # A class attribute of the name, which a read finds where no store gave the instance one.
        ("    gain = torch.ones(3)\n", SUM.replace("self.beta", "self.gain"),
         "coefficient `self.gain` is bound to `gain = torch.ones(3)` in a class body (line 13)"),
        # A call in the sum that may rebind it runs after the one evaluation, before the sum read it.
        ("    def bump(self):\n        self.beta = 0.5\n        return 0.0\n", SUM.replace(" + self.beta", " + self.bump() + self.beta"),
         "`self.bump()`"),
    ],
    ids=["bound-to-a-tensor", "property", "setattr", "class-attribute", "rebound-in-the-sum"],
)
def test_a_coefficient_not_proven_a_caller_s_number_stays_unsafe(extra, terms, reason):
    result = _lint(_src("0.25", terms, extra), ["GF002"], unsafe=True)
    assert [(f.code, f.fixable) for f in result.findings] == [("GF002", False)]
    assert reason in result.findings[0].message, result.findings[0].message


def test_a_global_coefficient_not_a_number_keeps_the_merge_s_reason():
    src = _src("0.25", SUM.replace("self.beta", "WEIGHT")).replace("BETA = 0.25\n", "BETA = 0.25\nWEIGHT = torch.ones(1) * 0.25\n")
    result = _lint(src, ["GF002"], unsafe=True)
    assert [f.fixable for f in result.findings] == [False]
    assert "coefficient `WEIGHT` is not a number" in result.findings[0].message


def test_a_weight_read_from_a_configuration_is_a_caller_s_value():
    """`self.beta = getattr(config, "beta", 0.25)` (transformers' VQ modules) and `cfg.beta`: what
    the caller's configuration holds."""
    for binding in ('getattr(config, "beta", 0.25)', "config.beta"):
        src = (
            _src("0.25")
            .replace("def __init__(self, num_codes, dim, beta=0.25):", "def __init__(self, num_codes, dim, config):")
            .replace("self.beta = beta", f"self.beta = {binding}")
            .replace("quantizer = VectorQuantizer(32, 8, beta=BETA)", "quantizer = VectorQuantizer(32, 8, argparse.Namespace(beta=BETA))")
            .replace("import numpy as np\n", "import argparse\nimport numpy as np\n")
        )
        result = _lint(src, ["GF002"])
        assert [(f.code, f.fixable) for f in result.findings] == [("GF002", True)], result.findings[0].message
        _safe_fix_is_exact(src, ["GF002"])
