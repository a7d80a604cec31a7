"""Reads of a loss name after the name was bound anew (issue 12, "read as a tensor" that is not).

GF001 and GF004 turn a loss name into a value with other gradients; a read of the name as a
tensor elsewhere makes the fix unsafe. A read that comes after the block binds the name anew
(`l2 = torch.zeros(())`, `series_loss, prior_loss = 0.0, 0.0`) sees the new value, not the loss:
it is no reason. Each safe fix is executed against the original; the near misses (a rebinding
under `if`, a read in a lambda, a rebinding before the pair ends) stay unsafe.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact, _src

GF001 = _src(
    """
    def step():
        x, y = a * 2, b * 3
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -F.mse_loss(x, y.detach())
        l2.backward()
        {REBIND}
        return {READ}
    """
)

GF004 = _src(
    """
    def step():
        x, y = a * 2, b * 3
        s = F.mse_loss(x, y.detach())
        p = F.mse_loss(x.detach(), y)
        loss1 = 1.0 - s
        loss2 = 2.0 + p
        loss1.backward(retain_graph=True)
        loss2.backward()
        {REBIND}
        return {READ}
    """
)

SAFE = {
    "gf001_rebound": (GF001, "GF001", "l2 = (a * 5).sum()", "l2 * 3"),
    "gf001_tuple": (GF001, "GF001", "l1, l2 = a.sum(), b.sum()", "torch.stack([l1, l2])"),
    "gf004_rebound": (GF004, "GF004", "s, p = 0.0 * a.sum(), b.mean()", "s + p"),
}

UNSAFE = {
    # Under `if`, the rebinding may not run: the read may see the loss.
    "gf001_conditional": (GF001, "GF001", "if a.sum() > 100:\n        l2 = (a * 5).sum()", "l2 * 3"),
    # A lambda reads the name when called, which may be after the name is the loss again.
    "gf001_lambda": (GF001, "GF001", "l2 = (a * 5).sum()", "(lambda: l2 * 3)"),
    # An attribute store does not rebind the name.
    "gf004_attribute": (GF004, "GF004", "s.tag = 1", "s * 2"),
}


def _case(template, rebind, read):
    return template.replace("{REBIND}", rebind).replace("{READ}", read)


@pytest.mark.parametrize("case", sorted(SAFE))
def test_a_read_after_the_name_is_bound_anew_is_no_reason(case):
    template, code, rebind, read = SAFE[case]
    src = _case(template, rebind, read)
    result = _lint(src, [code])
    (finding,) = [f for f in result.findings if f.code == code]
    assert finding.fix is not None and finding.fix.safe, finding.message
    assert "read as a tensor" not in finding.message
    assert result.applied == 1
    _safe_fix_is_exact(src, [code])


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_a_read_that_may_see_the_loss_stays_a_reason(case):
    template, code, rebind, read = UNSAFE[case]
    src = _case(template, rebind, read)
    result = _lint(src, [code], fix=False)
    (finding,) = [f for f in result.findings if f.code == code]
    assert finding.fix is not None and not finding.fix.safe
    assert "is also read as a tensor" in finding.message, finding.message


def test_a_rebinding_before_the_pair_ends_does_not_hide_later_reads():
    src = _src(
        """
        def step():
            x, y = a * 2, b * 3
            l1 = F.mse_loss(x.detach(), y)
            l1.backward(retain_graph=True)
            keep = l1
            l1 = a.sum()
            l2 = -F.mse_loss(x, y.detach())
            l2.backward()
            return keep * 2
        """
    )
    result = _lint(src, ["GF001"], fix=False)
    assert all(not f.fix or not f.fix.safe for f in result.findings if f.code == "GF001")
