"""GF004: where a coefficient cancelled in the ratio must be proven unchanged (`_coefficient_changes`),
each case kept as a program in `tests/gf004_coefficient_span/` and executed.

- The span is the statements from its first use to its last in the innermost statement list holding
  both, or the outermost loop of the expanded block around them (a use in iteration i and the next
  ones: the back edge). A loop around the block itself is not part of it: the expansion walks the
  block once, so every use and the run's backward calls are in one pass; the next iteration reads
  both uses anew (DCdetector's `fit`: `prior` rebound and `self.optimizer.zero_grad()` at the top of
  each iteration, `len(prior)` read twice below, made the fix unsafe).
- `self.X.zero_grad()` in the span, `X` proven a torch optimizer or module, changes only gradients:
  it is no change of a coefficient proven to read none (`len(path)`, a number). A name bound to a
  tensor (`g = T.grad`, zeroed in place: not executed, the original raises), or a `zero_grad` of a
  class of the file, stays a change.

`S_*`: safe fixes, executed exact; `U_*`: the unsafe fix, whose rewrite prints something else (or
no GF004 finding, and GF003's safe merge executed exact).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

HERE = Path(__file__).parent / "gf004_coefficient_span"
CASES = sorted(HERE.glob("*.py"))
# None: no finding; (code, text of the unsafe reason); or (code, None): a safe fix, executed exact.
EXPECTED = {
    "S_01_dcdetector_loop_rebinds_operand": ("GF004", None),
    "S_02_torch_zero_grad_between_uses": ("GF004", None),
    "U_01_operand_appended_through_alias_between_uses": ("GF004", "coefficient `len(prior)` may change between its uses (lines 32 to 34): `seen.append()` modifies an operand"),
    "U_02_operand_rebound_between_uses": ("GF003", None),
    "U_04_zero_grad_of_a_class_of_the_file": ("GF004", "coefficient `len(prior)` may change between its uses (lines 41 to 43): `self.optimizer.zero_grad()` runs"),
    "U_05_coefficient_changed_on_the_inner_loop_back_edge": ("GF004", "`anneal()` between the uses of coefficient `cfg.k` (lines 37 to 42) may change it"),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _reasons(src: str):
    from tests.test_field_cases import _lint

    return [(f.fixable, f.fix.unsafe_reason if f.fix is not None else None) for f in _lint(src, ["GF004"]).findings]


def _case(stem: str) -> str:
    return (HERE / f"{stem}.py").read_text()


USES = "                series_loss = series_loss / len(prior)\n                prior_loss = prior_loss / len(prior)\n"


def test_both_uses_in_one_loop_of_the_block_span_the_loop():
    # Both uses in the per-layer loop, `anneal(cfg)` after them: the span is the whole loop (its back
    # edge: the next iteration's uses come after the call), not the two statements.
    src = _case("U_05_coefficient_changed_on_the_inner_loop_back_edge")
    src = src.replace("                prior_loss = prior_loss / len(prior) / cfg.k\n", "                prior_loss = prior_loss / len(prior)\n")
    src = src.replace("torch.mean(kl(series[u].detach(), prior[u]))\n", "torch.mean(kl(series[u].detach(), prior[u])) / cfg.k\n")
    [(fixable, reason)] = _reasons(src)
    assert not fixable and "`anneal()` between the uses of coefficient `cfg.k` (lines 37 to 40) may change it" in reason


@pytest.mark.parametrize("coefficient", ["T.grad", "g"])
def test_grad_coefficient_with_zero_grad_between(coefficient):
    # A coefficient reading `.grad`, or a name bound to it (`g = T.grad`): `zero_grad(set_to_none=False)`
    # zeroes it in place, `zero_grad()` sets `T.grad` to None (not executed: the original raises, the
    # in-place zero of a tensor saved for the backward, or `None` in the product).
    src = _case("S_02_torch_zero_grad_between_uses")
    src = src.replace("V = torch.randn(4, 3, 3, requires_grad=True)\n", "V = torch.randn(4, 3, 3, requires_grad=True)\nT = torch.tensor(2.0, requires_grad=True)\n")
    src = src.replace("                rec = (W ** 2).mean()\n", "                rec = (W ** 2).mean()\n                g = T.grad\n")
    src = src.replace("series_loss / len(prior)\n", f"series_loss * {coefficient}\n").replace("prior_loss / len(prior)\n", f"prior_loss * {coefficient}\n")
    src = src.replace("self.optimizer.zero_grad()\n", "self.optimizer.zero_grad(set_to_none=False)\n")
    [(fixable, reason)] = _reasons(src)
    assert not fixable and f"coefficient `{coefficient}` may change between its uses" in reason


@pytest.mark.parametrize(
    "binding, fixable",
    [
        ("K = 2.0\n", True),  # a module constant bound to a number
        ("", True),  # ... read as `len(prior)` (the case as written)
    ],
)
def test_zero_grad_between_uses_of_a_number(binding, fixable):
    src = _case("S_02_torch_zero_grad_between_uses")
    if binding:
        src = src.replace("\n\ndef kl(", f"\n{binding}\n\ndef kl(", 1)
        src = src.replace("series_loss / len(prior)\n", "series_loss / K\n").replace("prior_loss / len(prior)\n", "prior_loss / K\n")
    [(ok, reason)] = _reasons(src)
    assert ok is fixable, reason


@pytest.mark.parametrize(
    "binding, fixable",
    [
        ("                k = 2.0\n", True),  # a name of the function bound only to numbers
        ("                k = W.grad[0, 0, 0] if W.grad is not None else 1.0\n", False),  # may share a gradient's storage
    ],
)
def test_zero_grad_between_uses_of_a_local_name(binding, fixable):
    src = _case("S_02_torch_zero_grad_between_uses").replace("                rec = (W ** 2).mean()\n", "                rec = (W ** 2).mean()\n" + binding)
    src = src.replace("series_loss / len(prior)\n", "series_loss / k\n").replace("prior_loss / len(prior)\n", "prior_loss / k\n")
    [(ok, reason)] = _reasons(src)
    assert ok is fixable, reason
    if not fixable:
        assert "coefficient `k` may change between its uses" in reason and "`self.optimizer.zero_grad()` runs" in reason


def test_zero_grad_with_other_arguments_stays_a_change():
    src = _case("S_02_torch_zero_grad_between_uses").replace("self.optimizer.zero_grad()\n", "self.optimizer.zero_grad(set_to_none=flag())\n")
    src = src.replace("\n\ndef kl(", "\n\ndef flag():\n    return True\n\n\ndef kl(", 1)
    [(fixable, reason)] = _reasons(src)
    assert not fixable and "`self.optimizer.zero_grad()` runs" in reason
