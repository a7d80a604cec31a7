"""GF004 with each loss returned by a helper method (issue 12): the Anomaly-Transformer family's
`min_loss`/`max_loss`, each assigning its operands (one list stopped item by item) and a signed
coefficient to locals, and calling `loss_function(out, P, S, lambda_, x)`, which weighs
`norm(association_discrepancy(P, S))` by `lambda_` under a mean:

    def min_loss(self, x):
        P_list = self.P_layers
        S_list = [S.detach() for S in self.S_layers]
        lambda_ = -self.lambda_
        return self.loss_function(self.output, P_list, S_list, lambda_, x)

The helpers are inlined two levels deep (`objective`'s walk, `_inline`), the locals replaced by their
values, and the mean read as linear (`linear.ElementCount`). Every rewrite is executed against the
original (`tests/gf004_helpers/*.py`: a training method of the same class calls both helpers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact, _unsafe_fix_is_exact

HERE = Path(__file__).resolve().parent / "gf004_helpers"


def _source(name: str) -> str:
    return (HERE / name).read_text()


def _step(fixed: str) -> str:
    body = fixed[fixed.index("    def training_step") :]
    return body[: body.index("\n\n\n")]


def test_lists_stopped_item_by_item_are_found_unsafe_and_exact():
    src = _source("min_max_loss_lists.py")
    result = _lint(src, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(48, 20, False)]
    message = result.findings[0].message
    assert "`torch.linalg.norm` evaluated twice with complementary `.detach()` (line 47, in `min_loss`, and here, in `max_loss`)" in message
    assert "(`.detach()` inside `self.max_loss`" in message
    # Attributes holding the layers' lists: an iterator would give the second evaluation other items.
    assert "`self.P_layers` is stop-gradiented item by item: gradfix cannot prove it a list or tuple" in message
    fixed = _lint(src, ["GF004"], unsafe=True).fixed.decode()
    assert _step(fixed) == (
        "    def training_step(self, x, optimizer):\n"
        "        self(x)\n"
        "        norm_shared = torch.linalg.norm(self.association_discrepancy(self.P_layers, grad_scale(self.S_layers, -1.0), grad_scale(x, 0.0)), ord=1, dim=1)\n"
        "        min_loss = torch.mean(\n"
        "            torch.linalg.matrix_norm(self.output - x, ord=\"fro\") - ((-self.lambda_) * norm_shared)\n"
        "        ) / self.window_size\n"
        "        max_loss = torch.mean(\n"
        "            torch.linalg.matrix_norm(self.output - x, ord=\"fro\") - (self.lambda_ * norm_shared.detach())\n"
        "        ) / self.window_size\n"
        "        optimizer.zero_grad()\n"
        "        (min_loss + max_loss).backward()\n"
        "        optimizer.step()"
    )
    _unsafe_fix_is_exact(src, ["GF004"])


def test_tensors_are_found_safe_and_exact():
    # The operands are tensors, the mean is taken of a local (`ret.mean()`): a safe fix.
    src = _source("min_max_loss_tensors.py")
    result = _lint(src, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(44, 20, True)]
    assert _step(result.fixed.decode()) == (
        "    def training_step(self, x, optimizer):\n"
        "        self(x)\n"
        "        norm_shared = torch.linalg.norm(self.discrepancy(self.P, grad_scale(self.S, -1.0)), ord=1, dim=1)\n"
        "        min_loss = (torch.linalg.matrix_norm(self.output - x, ord=\"fro\") - (-self.lambda_) * norm_shared).mean()\n"
        "        max_loss = (torch.linalg.matrix_norm(self.output - x, ord=\"fro\") - self.lambda_ * norm_shared.detach()).mean()\n"
        "        optimizer.zero_grad()\n"
        "        (min_loss + max_loss).backward()\n"
        "        optimizer.step()"
    )
    _safe_fix_is_exact(src, ["GF004"])


@pytest.mark.parametrize(
    "old, new",
    [
        # A local read twice: not inlined (its value would be evaluated twice).
        ("        lambda_ = -self.lambda_\n        return self.loss_function(self.output, P, S, lambda_, x)",
         "        lambda_ = -self.lambda_\n        return self.loss_function(self.output, P, S, lambda_ * lambda_ / lambda_, x)"),
        # A local rebound: not the shape.
        ("        S = self.S.detach()\n", "        S = self.S.detach()\n        S = S * 1.0\n"),
        # A helper that changes something (logs into the model): not pure, not inlined.
        ("        lambda_ = -self.lambda_\n", "        lambda_ = -self.lambda_\n        self.seen = True\n"),
        # The coefficient parameter also read inside a call: an operand, not a weight; the inner
        # helper is not inlined and the two `loss_function` calls differ by `lambda_`.
        ("        ret = frob_norm - lambda_ * torch.linalg.norm(self.discrepancy(P, S), ord=1, dim=1)",
         "        ret = frob_norm - lambda_ * torch.linalg.norm(self.discrepancy(P, S) * abs(lambda_), ord=1, dim=1)"),
        # A mean over one dimension is no linear reduction of every element alike.
        ("        return ret.mean()", "        return ret.mean(0).sum()"),
    ],
    ids=["local_read_twice", "local_rebound", "helper_not_pure", "coefficient_read_in_a_call", "mean_over_a_dimension"],
)
def test_refused(old, new):
    src = _source("min_max_loss_tensors.py")
    assert old in src
    changed = src.replace(old, new, 1)
    assert _lint(changed, ["GF004"], unsafe=True).findings == []


REVIEW = sorted(p.name for p in HERE.glob("r[0-9]*.py"))


def test_the_review_cases_are_there():
    assert len(REVIEW) == 10


@pytest.mark.parametrize("name", REVIEW)
def test_review_reproducers_get_no_safe_fix(name):
    """Each was a working program whose safe fix changed a gradient when executed (helpers inlined
    with an argument run twice or not at all, a tensor weight between nested means, a helper
    `self.name` may not be, a property read as a plain value)."""
    src = (HERE / name).read_text()
    result = _lint(src, ["GF004"])
    assert not any(f.fixable for f in result.findings), [f.message for f in result.findings]


@pytest.mark.parametrize(
    "name, reason",
    [
        ("r04_rep3_overridden_helper.py", "it is inlined from `self.max_loss`, but"),
        ("r08_rep4_property_through_helper.py", "may be computed anew on each read"),
        ("r09_s07_lambda_property.py", "coefficient `self.lambda_` may be computed anew on each read"),
        ("r10_one_line_class_property.py", "coefficient `self.lambda_` may be computed anew on each read"),
    ],
)
def test_review_reproducers_name_the_reason(name, reason):
    result = _lint((HERE / name).read_text(), ["GF004"])
    assert [f.fixable for f in result.findings] == [False]
    assert reason in result.findings[0].message, result.findings[0].message
