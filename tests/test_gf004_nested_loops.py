"""GF004 through one level of nested loops: per layer, per head (issue 12).

    for u in range(len(prior)):
        for h in range(heads):
            series_loss += kl(series[u][h], prior[u][h].detach())
            prior_loss += kl(series[u][h].detach(), prior[u][h])

A nested loop of simple statements is followed as part of the outer body: each of its
statements runs once per iteration of both loops, so two terms of the inner body pair up like
two terms of one loop body. Every rewrite here is executed against the original.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 2, 4, 6)
K = 3.0
log = []


def kl(p, q):
    return (p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))).sum(-1).mean()


def step():
    series = [torch.softmax(enc(x[i]), -1) for i in range(3)]
    prior = [torch.softmax(pri(x[i]), -1) for i in range(3)]
    rec = (enc(x) - x).pow(2).mean()
    series_loss = 0.0
    prior_loss = 0.0
'''

LOOPS = '''\
    for u in range(len(prior)):
        for h in range(2):
            series_loss += kl(series[u][h], prior[u][h].detach())
            prior_loss += kl(series[u][h].detach(), prior[u][h])
'''

TAIL = '''\
    loss1 = rec - K * series_loss / len(prior)
    loss2 = rec + K * prior_loss / len(prior)
    loss1.backward(retain_graph=True)
    loss2.backward()
'''


def test_found_and_exact():
    src = HEAD + LOOPS + TAIL
    result = _lint(src, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(25, 27, True)]
    assert (
        "        for h in range(2):\n"
        "            kl_shared = kl(series[u][h], grad_scale(prior[u][h], -1.0))\n"
        "            series_loss += kl_shared\n"
        "            prior_loss += kl_shared.detach()\n"
    ) in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF004"])


@pytest.mark.parametrize(
    "loops",
    [
        # statements around the nested loop in the outer body, the sums also added to there
        '''\
    for u in range(len(prior)):
        w = 0.5 * u
        series_loss += 0.1 * rec
        for h in range(2):
            series_loss += kl(series[u][h], prior[u][h].detach()) + kl(prior[u][h].detach(), series[u][h])
            prior_loss += kl(series[u][h].detach(), prior[u][h]) + kl(prior[u][h], series[u][h].detach())
        log.append(w)
''',
        # two nested loops in one outer body, each holding a pair
        '''\
    for u in range(len(prior)):
        for h in range(2):
            series_loss += kl(series[u][h], prior[u][h].detach())
            prior_loss += kl(series[u][h].detach(), prior[u][h])
        for h in range(1):
            series_loss = series_loss + kl(prior[u][h].detach(), series[u][h])
            prior_loss = prior_loss + kl(prior[u][h], series[u][h].detach())
''',
        # the inner loop over the items of a list
        '''\
    for u in range(len(prior)):
        for s_h, p_h in zip(series[u], prior[u]):
            series_loss += kl(s_h, p_h.detach())
            prior_loss += kl(s_h.detach(), p_h)
''',
    ],
    ids=["statements_around", "two_inner_loops", "zip_inner"],
)
def test_variants_are_exact(loops):
    src = HEAD + loops + TAIL
    result = _lint(src, ["GF004"])
    assert result.findings and all(f.fixable for f in result.findings), [f.message for f in result.findings]
    _safe_fix_is_exact(src, ["GF004"])


@pytest.mark.parametrize(
    "loops",
    [
        # one term in the outer body, the other in the nested loop: other iterations
        '''\
    for u in range(len(prior)):
        series_loss += kl(series[u][0], prior[u][0].detach())
        for h in range(1):
            prior_loss += kl(series[u][h].detach(), prior[u][h])
''',
        # a name bound in the nested loop, read after it: only its last inner iteration's value
        '''\
    for u in range(len(prior)):
        for h in range(2):
            t = kl(series[u][h], prior[u][h].detach())
            prior_loss += kl(series[u][h].detach(), prior[u][h])
        series_loss += t
''',
        # a list appended to in the nested loop: one item per inner iteration
        '''\
    terms = []
    for u in range(len(prior)):
        for h in range(2):
            terms.append(kl(series[u][h], prior[u][h].detach()))
            prior_loss += kl(series[u][h].detach(), prior[u][h])
    series_loss = torch.stack(terms).mean()
''',
        # the nested loop breaks early
        '''\
    for u in range(len(prior)):
        for h in range(2):
            series_loss += kl(series[u][h], prior[u][h].detach())
            prior_loss += kl(series[u][h].detach(), prior[u][h])
            break
''',
    ],
    ids=["outer_and_inner", "inner_name_read_after", "inner_append", "inner_break"],
)
def test_near_misses_are_not_reported(loops):
    src = HEAD + loops + TAIL
    assert _lint(src, ["GF004"], unsafe=True).findings == []
