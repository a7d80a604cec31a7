"""A later backward on a loss built afresh (issue 12: "a later `loss_g.backward()` may use a graph
that `retain_graph=True` kept alive" where `loss_g` comes from a fresh forward).

After a GAN's discriminator step, `z = torch.randn(...); fake = G(z); loss_g = crit(D(fake), ones);
loss_g.backward()` builds its whole graph anew: the merge of the discriminator's backward calls
(GF003) cannot free anything it needs. `gradfix.analysis.fresh` proves that from an allowlist;
each safe fix is executed against the original, and each near miss (a name from before the
merge, an in-place update, an attribute) keeps the reason and shows the rewrite raising where it
would.
"""

from __future__ import annotations

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

GAN = """import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
D = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
crit = nn.BCEWithLogitsLoss()
optD = torch.optim.SGD(D.parameters(), lr=0.1)
optG = torch.optim.SGD(G.parameters(), lr=0.1)
real = torch.randn(16, 3)
ones = torch.ones(16, 1)
zeros = torch.zeros(16, 1)


def step():
    optD.zero_grad()
    fake = G(torch.randn(16, 4))
    loss_real = crit(D(real), ones)
    loss_fake = crit(D(fake.detach()), zeros)
    loss_real.backward(retain_graph=True)
    loss_fake.backward()
    optD.step()
    optG.zero_grad()
    z = torch.randn(16, 4)
    fake2 = G(z)
    loss_g = crit(D(fake2), ones)
    print(f"{float(loss_g):.3f}")
    loss_g.backward()
    optG.step()
"""

LATER = "a later `loss_g.backward()` (line {}) may use a graph that `retain_graph=True` kept alive"


def _lint(source: str, **options):
    return lint_bytes(source.encode(), "gan.py", LintOptions(("GF003",), **options))


def test_a_generator_step_after_the_merge_is_built_afresh():
    result = _lint(GAN, fix=True)
    (finding,) = result.findings
    assert (finding.line, finding.fixable) == (20, True), finding.message
    assert "loss_real.backward()" not in result.fixed.decode() and "(loss_real + loss_fake).backward()" in result.fixed.decode()
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(GAN, result.fixed.decode(), filename="gan.py", device="cpu", repeat=0)
    assert report.error is None and report.rows and all(r.ok for r in report.rows)


NEAR_MISSES = {
    # `h` comes from before the merge, and the merged losses' graph holds it: the merge frees it.
    "reads_a_name_from_before": ("    fake2 = G(z)\n", "    fake2 = G(z) + h\n", 29),  # (one line more: `h = D(real)`)
    # `fake` from before, read by the discriminator's loss without `.detach()` there.
    "reuses_a_name_read_with_gradient_before": (
        ("    loss_fake = crit(D(fake.detach()), zeros)\n", "    fake2 = G(z)\n"),
        ("    loss_fake = crit(D(fake), zeros)\n", "    fake2 = G(z) + fake\n"),
        28,
    ),
    # `fake` from before, handed to code gradfix does not know before the merge.
    "reuses_a_name_handed_on_before": ("    fake2 = G(z)\n", "    fake2 = G(z) + fake\n    record(fake)\n", 29),
    # An in-place update may tie the fresh loss to the old graph.
    "augmented": ("    fake2 = G(z)\n", "    fake2 = G(z)\n    fake2 += fake\n", 29),
    "inplace_method": ("    fake2 = G(z)\n", "    fake2 = G(z)\n    fake2.add_(fake)\n", 29),
    # Handed to code gradfix does not know, which may update it in place.
    "handed_on": ("    fake2 = G(z)\n", "    fake2 = G(z)\n    record(fake2)\n", 29),
    # An attribute may hold a tensor of an old graph.
    "attribute": ("    fake2 = G(z)\n", "    fake2 = G(z) * box.scale\n", 28),
    # Bound twice, once before the merge.
    "bound_before_too": ("    fake = G(torch.randn(16, 4))\n", "    fake = G(torch.randn(16, 4))\n    fake2 = fake\n", 29),
}


@pytest.mark.parametrize(
    "change",
    [
        # `ones`, graph-free from before, updated in place with a tensor of the old graph here...
        lambda src: src.replace("    optG.zero_grad()\n", "    ones.add_(loss_real * 0)\n    optG.zero_grad()\n"),
        # ...or handed to code that may do so...
        lambda src: src.replace("    optG.zero_grad()\n", "    poison(ones)\n    optG.zero_grad()\n"),
        # ...or updated in place by another function of the file with a tensor it was given.
        lambda src: src + "\n\ndef later(t):\n    ones.add_(t)\n",
    ],
    ids=["inplace_here", "handed_on", "inplace_elsewhere"],
)
def test_a_graph_free_tensor_from_before_that_may_be_updated_in_place_keeps_the_reason(change):
    source = change(GAN) + "\n\ndef poison(t):\n    t.add_(1.0)\n"
    (finding,) = _lint(source).findings
    assert not finding.fixable and "may use a graph that `retain_graph=True` kept alive" in finding.message


def test_a_graph_free_tensor_updated_elsewhere_by_a_number_stays_graph_free():
    # (Review round 6: an in-place update given only Python numbers ties it to no graph.)
    (finding,) = _lint(GAN + "\n\ndef later():\n    ones.add_(1.0)\n").findings
    assert finding.fixable, finding.message


@pytest.mark.parametrize("case", sorted(NEAR_MISSES))
def test_a_later_loss_that_may_reach_back_keeps_the_reason(case):
    old, new, later = NEAR_MISSES[case]
    if "+ h\n" in new:  # `h`: a tensor of the discriminator's graph
        source = GAN.replace("    loss_real = crit(D(real), ones)\n", "    h = D(real)\n    loss_real = crit(h, ones)\n")
    else:
        source = GAN
    for o, n in zip((old,) if isinstance(old, str) else old, (new,) if isinstance(new, str) else new):
        source = source.replace(o, n, 1)
    source = source + "\n\ndef record(t):\n    pass\n\n\nclass Box:\n    scale = 1.0\n\n\nbox = Box()\n"
    (finding,) = _lint(source).findings
    assert not finding.fixable
    assert LATER.format(later) in finding.message, finding.message


def test_the_rewrite_a_reaching_loss_forbids_raises():
    # The later loss reads `h`, which both discriminator losses' graphs contain: the merge frees it.
    source = GAN.replace("    loss_real = crit(D(real), ones)\n", "    h = D(real)\n    loss_real = crit(h, ones)\n").replace(
        "    loss_g = crit(D(fake2), ones)\n", "    loss_g = crit(D(fake2), ones) + h.sum()\n"
    ).replace("    optD.step()\n", "")  # (stepping D would make the original raise: `h` saved its weights)
    (finding,) = _lint(source).findings
    assert not finding.fixable and LATER.format(28) in finding.message, finding.message
    harness = pytest.importorskip("gradfix.harness")
    rewritten = _lint(source, fix=True, unsafe_fixes=True).fixed.decode()
    report = harness.verify_pair(source, rewritten, filename="gan.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error


def test_a_fresh_name_a_nested_function_rebinds_keeps_the_reason():
    # `g` rebinds `fake2` (nonlocal) to a tensor of the discriminator's graph before the generator
    # loss reads it: that loss is not built afresh, and the merge would free what it needs.
    source = GAN.replace("    fake2 = G(z)\n", "    fake2 = G(z)\n\n    def g():\n        nonlocal fake2\n        fake2 = h\n\n    g()\n").replace(
        "    loss_real = crit(D(real), ones)\n", "    h = G(torch.randn(16, 4)) * 1.0\n    loss_real = crit(D(h), ones)\n"
    ).replace("    optD.step()\n", "")
    _unsafe_and_raises(source)


REUSED = GAN.replace("    z = torch.randn(16, 4)\n    fake2 = G(z)\n", "").replace("crit(D(fake2), ones)", "crit(D(fake), ones)")


@pytest.mark.parametrize(
    "source",
    [
        REUSED,
        # the generator's output through a name of its own, and a graph-free tensor added
        REUSED.replace("    loss_g = crit(D(fake), ones)\n", "    fake2 = fake * 0.5 + ones * 0.0\n    loss_g = crit(D(fake2), ones)\n"),
        # `fake` built from a name of its own, also read only detached before the merge
        REUSED.replace("    fake = G(torch.randn(16, 4))\n", "    hidden = G(torch.randn(16, 4))\n    fake = torch.tanh(hidden) * 0.5\n").replace(
            "    loss_real = crit(D(real), ones)\n", "    loss_real = crit(D(real), ones) + 0.0 * hidden.detach().sum()\n"
        ),
    ],
    ids=["fake_reused", "through_a_name", "through_an_input"],
)
def test_a_generator_step_reusing_the_discriminators_fake_keeps_no_old_graph(source):
    """The discriminator read `fake` only as `fake.detach()`: its backward calls never went through
    `fake`'s graph, so the generator's loss may reuse it after the merge (issue 12)."""
    result = _lint(source, fix=True)
    (finding,) = result.findings
    assert finding.fixable, finding.message
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(source, result.fixed.decode(), filename="gan.py", device="cpu", repeat=0)
    assert report.error is None and report.rows and all(r.ok for r in report.rows)


def test_reusing_an_input_the_discriminator_read_with_gradient_keeps_the_reason_and_would_raise():
    # `hidden` feeds `fake`, and the discriminator's loss reads it with gradient: the merge frees
    # the generator's first layer, which the generator's loss goes through.
    source = REUSED.replace("    fake = G(torch.randn(16, 4))\n", "    hidden = G(torch.randn(16, 4))\n    fake = torch.tanh(hidden) * 0.5\n").replace(
        "    loss_real = crit(D(real), ones)\n", "    loss_real = crit(D(real), ones) + 0.0 * hidden.sum()\n"
    ).replace("    optD.step()\n", "")
    _unsafe_and_raises(source)


def _unsafe_and_raises(source: str) -> None:
    """The merge keeps the later-backward reason, and its rewrite, executed, raises where the
    later backward goes through the freed graph."""
    (finding,) = _lint(source).findings
    assert not finding.fixable and "may use a graph that `retain_graph=True` kept alive" in finding.message, finding.message
    harness = pytest.importorskip("gradfix.harness")
    rewritten = _lint(source, fix=True, unsafe_fixes=True).fixed.decode()
    report = harness.verify_pair(source, rewritten, filename="gan.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error
