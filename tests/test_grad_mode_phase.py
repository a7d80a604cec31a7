"""GF003 under torch's tutorial switch, `with torch.set_grad_enabled(phase == "train"):`.

A merge builds the sum of the losses at the last backward; where gradient recording may be off
there, the sum has no graph and its backward raises, so a `with` that may turn recording off makes
the merge unsafe (review, round 3). The tutorial's training loop puts the backward under `if phase ==
"train":` inside that `with`, where recording is provably on: `phase` is bound only by `for phase in
["train", "val"]` (a str, the same at the `with` and at the `if`), and the `if` tests the switch's
condition again (`backward._phase_switch_on`). Every other shape keeps the reason: executed here, the
original runs and the unsafe merge raises.
"""
from pathlib import Path

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from tests.test_review_reproducers import ALL, check_case

CASES = sorted((Path(__file__).parent / "grad_mode_phase").glob("*.py"))
OFF = 'with torch.set_grad_enabled(phase == "train"):` (line 14) may turn gradient recording off'

EXPECTED = {
    "P_01_gf003_tutorial_phase_loop_keeps_safe_fix": ("GF003", None),
    "N_01_gf003_phase_switch_without_if": ("GF003", OFF),
    "N_02_gf003_phase_switch_other_test": ("GF003", OFF),
    "N_03_gf003_phase_rebound_inside_switch": ("GF003", OFF),
    "N_04_gf003_phase_backward_in_else": ("GF003", OFF),
    "P_02_gf003_module_level_phase_loop_keeps_safe_fix": ("GF003", None),
    "N_05_gf003_module_phase_rebound_by_globals": ("GF003", OFF.replace("line 14", "line 12")),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


LOOP = '''\
{imports}
w = torch.randn(3, requires_grad=True)


def train({params}):
{setup}    for phase in {phases}:
        with {switch}({condition}):
            h = torch.tanh(w * 2)
            l1 = (h ** 2).mean()
            l2 = (h - 1).abs().mean()
            if {test}:
                l1.backward(retain_graph=True)
                l2.backward()
'''


def _fix(**changes):
    """(safe, unsafe reason) of the one GF003 finding on the tutorial loop with `changes`."""
    values = dict(imports="import torch", params="", setup="", phases='["train", "val"]',
                  switch="torch.set_grad_enabled", condition='phase == "train"', test='phase == "train"')
    values.update(changes)
    findings = lint_bytes(LOOP.format(**values).encode(), "train.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF003"]
    return findings[0].fix.safe, findings[0].fix.unsafe_reason or None


def test_the_tutorial_loop_is_safe():
    assert _fix() == (True, None)


@pytest.mark.parametrize("changes", [
    dict(imports="import torch as T\nimport torch", switch="T.set_grad_enabled"),
    dict(imports="import torch\nfrom torch import set_grad_enabled", switch="set_grad_enabled"),
    dict(condition='phase != "val"', test='phase != "val"'),
    dict(condition='"train" == phase', test='"train"==phase'),
    dict(phases='("train", "val", "test")'),
], ids=["module-alias", "imported-function", "not-equal", "literal-first", "tuple"])
def test_spellings_of_the_same_proof_are_safe(changes):
    assert _fix(**changes) == (True, None)


@pytest.mark.parametrize("changes", [
    dict(setup='    phases = ["train", "val"]\n', phases="phases"),  # not a display of literals
    dict(phases='["train", f"v{1}"]'),  # an f-string
    dict(params="phase"),  # a parameter: bound twice
    dict(imports="import torch\ndef set_grad_enabled(mode):\n    return torch.no_grad()\n", switch="set_grad_enabled"),
    dict(condition="phase in ('train',)", test="phase in ('train',)"),  # not `==` / `!=`
    dict(condition='phase == "train"', test='phase == "train" or True'),  # another test
    dict(setup="    global phase\n"),  # a module name the `for` rebinds: other code may too
    dict(setup="    exec('x = 1')\n"),  # bindings by a string
], ids=["name-of-list", "f-string", "parameter", "file-function", "membership", "other-test", "global", "exec"])
def test_anything_else_keeps_the_reason(changes):
    safe, reason = _fix(**changes)
    assert not safe and "may turn gradient recording off" in reason
