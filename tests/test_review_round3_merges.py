"""Review round 3, merges of backward passes (GF001, GF003, GF004's merge, GF005): the original
programs (tests/review_round3/J_*.py) for which gradfix offered a safe fix that changed the
gradients or crashed. The causes:

- a helper of the file called between the passes was taken as pure although it reads a `.grad`
  (`def grad_norm(t): return t.grad.norm()`): a gradient read is no pure function's
  (`bodies.BodyChecker`), so the call is not harmless between the passes;
- a custom autograd Function's backward read a module-level name (`grad * -LAMBDA`) that the step
  changed between the passes (`global LAMBDA; LAMBDA = 0.5`, `SCHEDULE["lambda"] = 0.5`): the
  backward reads it when it runs, so two passes see two values, a merged pass one. A name from
  outside that the file binds again, stores into or hands to a call makes the backward not proven
  stateless (`functions._changed_global`);
- an activation checkpoint reruns its forward in every backward pass: with the random state kept
  (the default), BatchNorm's running statistics and spectral norm's estimate still change once
  per pass (twice in two passes, once in a merged one), and under another name (`as ckpt`,
  `functools.partial(checkpoint, ..., preserve_rng_state=False)`) the check of the keyword did
  not see the call at all. Any checkpoint in the file, however spelled, makes merges unsafe
  (`FileFacts.checkpoint_uses`);
- the backward calls stood in `with torch.no_grad():` (the losses built before): the merged
  `(l1 + l2)` built there has no graph. A grad-mode switch around the calls, on the function or
  called in it makes the merge unsafe (`backward.grad_mode_reasons`);
- a parameter read by the second loss held a `.grad` (the file's caller passes
  `[p.grad for p in [w]]`): the first backward adds into it before the read, the merged one after.
  A parameter of a function that a call of the file hands a gradient counts as a name bound to one
  (`between.names_bound_to_gradients`), a barrier;
- code that runs later than its line: a function of the file that backpropagates handed on before
  the passes (`atexit.register(finish)`, `signal.signal(..., handler)`, `weakref.finalize(obj,
  finish)`, `@atexit.register`), a lambda's backward call, and `__del__`/`__enter__`/`__exit__`
  methods that backpropagate (Python runs them when an object goes or a block is left). "Later"
  was judged by line; such uses now count wherever they stand (`backward.later_use_reasons`):
  GF005 then reports nothing (retaining may be the point), merges are unsafe.
"""

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round3").glob("J_*.py"))

EXPECTED = {
    "J_01_helper_reads_grad_between_passes": ("GF004", "`grad_norm()` between the backward calls"),
    "J_02_gf003_helper_reads_grad": ("GF003", "`grad_norm()` between the backward calls"),
    "J_03_gf001_custom_backward_reads_changed_global": ("GF001", "reads `LAMBDA`, which the file changes"),
    "J_04_gf001_custom_backward_reads_changed_dict": ("GF001", "reads `SCHEDULE`, which the file changes"),
    "J_05_gf003_checkpoint_spectral_norm_recompute": ("GF003", "(line 6) is an activation checkpoint"),
    "J_06_gf003_checkpoint_batchnorm_running_stats": ("GF003", "(line 5) is an activation checkpoint"),
    "J_07_gf001_checkpoint_imported_under_alias": ("GF001", "`from torch.utils.checkpoint import checkpoint as ckpt` (line 8) is an activation checkpoint"),
    "J_08_gf001_checkpoint_through_functools_partial": ("GF001", "(line 9) is an activation checkpoint"),
    "J_09_gf003_merge_inside_no_grad": ("GF003", "`with torch.no_grad():` (line 13) may turn gradient recording off"),
    # A barrier, as `g = y.grad` read between the passes (tests/review_round2/F_05).
    "J_10_gf003_parameter_aliases_dot_grad": None,
    # GF005: a later backward may need the graph, so retaining it is the point: no finding.
    "J_11_gf005_main_atexit_registered_before": None,
    "J_12_gf005_main_with_exit_backprops": None,
    "J_13_gf005_main_del_backprops": None,
    "J_14_gf005_main_signal_handler": None,
    "J_15_gf005_main_weakref_finalize": None,
    "J_16_gf003_main_atexit_registered_before": ("GF003", "`finish` (line 16) may backpropagate later than its line"),
    "J_17_gf003_main_decorator_registers_callback": ("GF003", "`@atexit.register` (line 9) may backpropagate later than its line"),
    "J_18_gf003_main_lambda_callback": ("GF003", "`l1.backward` (line 10) may backpropagate later than its line"),
    "J_19_gf003_main_callback_through_alias": ("GF003", "`finish` (line 16) may backpropagate later than its line"),
}
# Programs that leave callbacks behind (atexit, signal handlers, finalizers, `__del__`).
APART = {f"J_{n}" for n in range(11, 20)}


def test_every_case_has_an_expectation():
    assert sorted(EXPECTED) == [path.stem for path in CASES]


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem[:4] in APART)


# -- the reach kept: shapes near the causes above that stay safe ------------------------------------

def _fixes(source: str):
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions
    from tests.test_review_reproducers import ALL

    return [(f.code, f.fixable) for f in lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings]


_MERGE = """
import torch
{head}
w = torch.randn(3, requires_grad=True)


def step():
{body}
    l1 = w.exp().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
"""


@pytest.mark.parametrize(
    "head, body",
    [
        # a variable named `checkpoint`, a function saving one: no activation checkpoint
        ("", "    checkpoint = {'w': w.detach()}\n    torch.save(checkpoint, 'c.pt')"),
        ("def save_checkpoint(p):\n    torch.save({}, p)\n", "    save_checkpoint('c.pt')"),
        # a custom backward reading a module-level constant the file never changes
        (
            "SCALE = 0.5\n\nclass Scale(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        return x.view_as(x)\n\n    @staticmethod\n    def backward(ctx, g):\n        return g * SCALE\n",
            "",
        ),
        # a helper of the file that reads no gradient, called between the passes is elsewhere
        ("def norm(t):\n    return t.norm()\n", "    print(norm(w.detach()))"),
        # a function that backpropagates, defined before and called nowhere later
        ("def other(l):\n    l.backward()\n", ""),
    ],
)
def test_merge_stays_safe(head, body):
    assert _fixes(_MERGE.format(head=head, body=body or "    pass")) == [("GF003", True)]


def test_enable_grad_around_the_passes_stays_safe():
    source = _MERGE.format(head="", body="    pass").replace(
        "    l1.backward(retain_graph=True)\n    l2.backward()", "    with torch.enable_grad():\n        l1.backward(retain_graph=True)\n        l2.backward()"
    )
    assert _fixes(source) == [("GF003", True)]
