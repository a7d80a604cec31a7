"""GF002: a squared difference written both ways round (stop 36).

A held-out VQ-GAN codebook (`/tmp/field4`, SJ1727) writes its two terms as
`torch.mean((z_q.detach() - z) ** 2)` and `torch.mean((z.detach() - z_q) ** 2)`: one computation,
since the square of `b - a` is the square of `a - b` bit for bit, and so are the gradients (IEEE
rounding is symmetric; `pow`'s and `-`'s backward change only signs). gradfix read them as two
callees and missed the pair. The two sides of a difference under `** 2` or `.pow(2)` are now
aligned in either order (`exprs.align_squared`, and the precheck's `_Normal`); any other power, or
no power, keeps the order. Each fix is executed against the original.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

SRC = """\
import torch

torch.manual_seed(0)
z = torch.randn(6, 4, requires_grad=True)
codes = torch.randn(6, 4, requires_grad=True)


def vq(z, z_q, beta):
{BODY}
    return loss


if __name__ == "__main__":
    vq(z, codes * 3.0, 0.25).backward()
    print(z.grad, codes.grad)
"""


def _src(body: str) -> str:
    return SRC.replace("{BODY}", body)


@pytest.mark.parametrize(
    "body, rewritten",
    [
        (
            "    loss = torch.mean((z_q.detach() - z) ** 2) + beta * torch.mean((z.detach() - z_q) ** 2)",
            "    loss_term = torch.mean((grad_scale(z_q, beta) - z) ** 2)\n    loss = loss_term + beta * loss_term.detach()\n",
        ),
        (
            "    commitment = torch.mean((z_q.detach() - z) ** 2)\n    codebook = torch.mean((z.detach() - z_q) ** 2)\n"
            "    loss = codebook + beta * commitment",
            None,
        ),
        (
            "    loss = ((z_q - z.detach()).pow(2)).mean() + beta * ((z - z_q.detach()).pow(2)).mean()",
            None,
        ),
        (
            "    loss = torch.sum((z_q.detach() - 2 * z) ** 2.0) + beta * torch.sum((2 * z.detach() - z_q) ** 2.0)",
            None,
        ),
    ],
)
def test_a_difference_squared_either_way_round_is_one_computation(body, rewritten):
    src = _src(body)
    result = _lint(src, ["GF002"])
    assert [(f.code, f.fixable, f.fix.safe) for f in result.findings] == [("GF002", True, True)]
    if rewritten is not None:
        assert rewritten in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF002"])


@pytest.mark.parametrize(
    "body",
    [
        # An odd power: the two values differ in sign.
        "    loss = torch.mean((z_q.detach() - z) ** 3) + beta * torch.mean((z.detach() - z_q) ** 3)",
        # No power: `a - b` is not `b - a`.
        "    loss = torch.mean(z_q.detach() - z) + beta * torch.mean(z.detach() - z_q)",
        "    loss = torch.mean((z_q.detach() - z).pow(3)) + beta * torch.mean((z.detach() - z_q).pow(3))",
        # A sum is no difference: `(a + b)` against `(b + a)` is not read as one here.
        "    loss = torch.mean((z_q.detach() / z) ** 2) + beta * torch.mean((z.detach() / z_q) ** 2)",
    ],
)
def test_other_powers_and_no_power_keep_the_order(body):
    assert _lint(_src(body), ["GF002"], fix=False).findings == []
