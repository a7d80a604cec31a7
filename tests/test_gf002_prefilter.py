"""GF002's precheck (CPython's parser): it keeps the shapes the rule reports and drops files that
only call `.detach()` (the torch sources: 150 files went through libcst, minutes)."""

from __future__ import annotations

import pytest

from gradfix.engine import prefilter
from gradfix.rules import gf002_detached_sum as gf002

HEAD = "import torch\nimport torch.nn.functional as F\n\n\ndef step(x, y, z, beta):\n"


@pytest.mark.parametrize(
    "body",
    [
        "    loss = F.mse_loss(x, y.detach()) + beta * F.mse_loss(x.detach(), y)\n",
        "    q = F.mse_loss(x, y.detach())\n    e = F.mse_loss(x.detach(), y)\n    return q + beta * e\n",
        "    return F.mse_loss(x, y.detach()) + F.mse_loss(y, x.detach())\n",  # swapped (symmetric callee)
        "    return F.mse_loss(torch.cat([x.detach(), z], 1), y) + F.mse_loss(torch.cat([x, z], 1), y.detach())\n",
        "    return F.mse_loss(x, y.detach().clone()) + F.mse_loss(x.clone().detach(), y)\n",
        "    return D(x.detach(), y).mean() + D(x, y.detach()).mean()\n",  # a method chain on the call
        "    return (x - y.detach()).pow(2).mean() + beta * (x.detach() - y).pow(2).mean()\n",  # on a receiver
        "    return F.mse_loss(torch.detach(x), y) + F.mse_loss(x, torch.detach(y))\n",  # `torch.detach(X)`
        "    return F.mse_loss((x - z).detach(), y) + F.mse_loss(x - z, y.detach())\n",  # parentheses of a stopped operand
        "    return D([s.detach() for s in x], y) + D(x, [p.detach() for p in y])\n",  # lists stopped item by item
        "    return D(x.detach(), x) + D(x, x.detach())\n",  # one operand twice
        # terms reached through names: linked, held in an attribute, bound in branches, a walrus
        "    e = F.mse_loss(x.detach(), y)\n    c = beta * e\n    v = z + c\n    return F.mse_loss(x, y.detach()) - v\n",
        "    self.q = F.mse_loss(x, y.detach())\n    return self.q + F.mse_loss(x.detach(), y)\n",
        "    if z:\n        e = F.mse_loss(x.detach(), y)\n    else:\n        e = 2 * F.mse_loss(x.detach(), y)\n"
        "    return F.mse_loss(x, y.detach()) + beta * e\n",
        "    return (e := F.mse_loss(x.detach(), y)) * 0 + (F.mse_loss(x, y.detach()) + e)\n",
        "    return F.mse_loss(x, y.data) + beta * F.mse_loss(x.data, y)\n",  # the legacy `.data`
        "    return F.mse_loss(x, y.data.clone()) + F.mse_loss(x.detach(), y)\n",
    ],
)
def test_the_shapes_of_a_pair_pass(body):
    assert prefilter((HEAD + body).encode(), [gf002]) == [gf002]


@pytest.mark.parametrize(
    "body",
    [
        "    return x.detach() + y.detach()\n",  # detaches, no call holding one
        "    return torch.detach(x).sum() + F.mse_loss(x, y)\n",  # one stop-gradient: no pair
        "    return torch.detach(x).sum() + F.mse_loss(x, y.detach())\n",
        # a pair never summed (DAC's quantizer returns its codebook and commitment losses apart)
        "    c = F.mse_loss(x, y.detach())\n    q = F.mse_loss(x.detach(), y)\n    x = x + (y - x).detach()\n    return x, c, q\n",
        # Both stopped, each a stop-gradient the other holds too: no complementary pair
        "    a.append([t.detach().clone() for t in x])\n    a.append(x.detach().clone())\n",
        "    return F.mse_loss(x.detach(), y) + F.mse_loss(x.data, y)\n",
        # `.data` chains: only the last one may be a stop-gradient (`y.data.data` vs `y.data.data.data`)
        "    return isinstance(y.data.data, D) or isinstance(y.data.data.data, D)\n",
        "    return F.mse_loss(x, y.detach()) + F.l1_loss(x.detach(), y)\n",  # two callees
        "    return F.mse_loss(x, y.detach()) + F.mse_loss(x, y.detach())\n",  # written the same
        "    return F.mse_loss(x, y.detach()) + F.mse_loss(z.detach(), y)\n",  # other arguments
        "    return (x - y.detach()).pow(2).mean() + (x - y.detach()).pow(2).mean()\n",  # receivers written the same
        "    return (x - y.detach()).pow(2).mean() + (x.detach() - y).abs().mean()\n",  # two methods
        # `.data` that is no operand: a module, a field taken from it, a method named `data`
        "    return F.mse_loss(x, torch.utils.data) + F.mse_loss(x.detach(), torch.utils)\n",
        "    return F.mse_loss(x, y.data.shape) + F.mse_loss(x.detach(), y)\n",
        "    return F.mse_loss(x, y.data()) + F.mse_loss(x.detach(), y)\n",
    ],
)
def test_files_without_a_pair_are_ruled_out(body):
    assert prefilter((HEAD + body).encode(), [gf002]) == []


def test_the_pair_must_be_in_one_function():
    source = HEAD + "    return F.mse_loss(x, y.detach())\n\n\ndef other(x, y):\n    return F.mse_loss(x.detach(), y)\n"
    assert prefilter(source.encode(), [gf002]) == []


def test_torch_utils_data_alone_passes_no_rule():
    """`X.data` counts as a stop-gradient in the token stage (`prechecks.two_stop_gradients`) only where
    it may be an operand: a training script that only imports and uses `torch.utils.data` and
    backpropagates twice is ruled out before any parse; two `.data` operands pass."""
    from gradfix.rules import gf001_detached_double_backward as gf001
    from gradfix.rules import gf004_detached_terms_across_losses as gf004

    source = (
        "import torch\nfrom torch.utils.data import DataLoader\nimport torch.utils.data as tud\n\n\n"
        "def step(a, b, ds, loader=torch.utils.data.DataLoader([])):\n"
        "    ds.data = ds.data.float()\n"
        "    a.backward(retain_graph=True)\n    b.backward()\n    (a + b).backward()\n"
    )
    assert prefilter(source.encode(), [gf001, gf002, gf004], parse=False) == []
    operands = source.replace("    b.backward()\n", "    b.backward()\n    F.mse_loss(a.data, b) + F.mse_loss(a, b.data)\n")
    assert prefilter(operands.encode(), [gf001, gf002, gf004], parse=False) == [gf001, gf002, gf004]


def test_functions_with_one_stop_gradient_are_not_walked(monkeypatch):
    """A pair is two stop-gradients of one function: a method whose lines (its decorators' too) hold
    fewer than two markers is skipped unwalked, and the file's verdict is the pairs' alone."""
    import ast

    methods = (
        "class M:\n"
        "    def a(self, x, y):\n        return F.mse_loss(x, y.detach())\n\n"
        "    @deco(F.mse_loss(x, y.detach()))\n    def b(self, x, y):\n        return F.mse_loss(x.detach(), y)\n\n"
    )
    pair = "    def c(self, x, y):\n        return F.mse_loss(x, y.detach()) + F.mse_loss(x.detach(), y)\n"
    walked = []
    real = ast.iter_child_nodes

    def spy(node):
        if isinstance(node, ast.FunctionDef):
            walked.append(node.name)
        return real(node)

    monkeypatch.setattr(gf002.ast, "iter_child_nodes", spy)
    assert prefilter((HEAD + "    pass\n\n\n" + methods).encode(), [gf002]) == []
    assert set(walked) == {"b"}  # `a` holds one marker; `b`'s decorator holds its second
    walked.clear()
    assert prefilter((HEAD + "    pass\n\n\n" + methods + pair).encode(), [gf002]) == [gf002]
    assert "a" not in walked and "c" in walked


def test_statements_without_a_marker_are_not_walked(monkeypatch):
    """Inside a function with two markers, only the statements whose lines hold one are walked
    (an `if` with a marked statement in its body is entered; its unmarked statements are not), and
    the verdict is the same: the pair is found across two marked statements, on lines numbered as
    the file's (a `\\r\\n` file, a decorator)."""
    import ast

    body = (
        "    @staticmethod\n"
        "    def c(x, y):\n"
        "        unmarked = F.relu(x) + F.relu(y)\n"
        "        if x.numel():\n"
        "            also_unmarked = torch.zeros(3)\n"
        "            a = F.mse_loss(x, y.detach())\n"
        "        b = F.mse_loss(x.detach(), y)\n"
        "        return a + b\n"
    )
    walked = []
    real = ast.iter_child_nodes

    def spy(node):
        if isinstance(node, ast.stmt):
            walked.append(type(node).__name__ + ":" + ast.unparse(node).split("\n")[0][:20])
        return real(node)

    monkeypatch.setattr(gf002.ast, "iter_child_nodes", spy)
    # (`_summed`, which walks the whole function to find the sum once a pair is found, is the next test's)
    monkeypatch.setattr(gf002, "_summed", lambda scope, calls, parents: True)
    for newline in ("\n", "\r\n"):
        walked.clear()
        source = (HEAD + "    pass\n\n\nclass M:\n" + body).replace("\n", newline).encode()
        assert prefilter(source, [gf002]) == [gf002]
        # (not `unmarked = ...`, `also_unmarked = ...` nor `return a + b`)
        assert sorted(walked) == ["Assign:a = F.mse_loss(x, y.", "Assign:b = F.mse_loss(x.det", "FunctionDef:@staticmethod", "If:if x.numel():"]
    # The same function with one of the two terms moved to an unmarked spelling has no pair.
    monkeypatch.undo()
    assert prefilter((HEAD + "    pass\n\n\nclass M:\n" + body.replace("x.detach()", "x")).encode(), [gf002]) == []
