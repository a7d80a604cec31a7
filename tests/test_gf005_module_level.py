"""GF005 in module-level script code (issue 12): reported, with a safe fix only under `if __name__ == "__main__":`.

Script code runs once: after it, only the module's own later code (checked as in
a function: a later backward keeps the rule quiet), the next iteration of a loop
(checked as in a function's loop), and code that imports the module or a
notebook's later cell (out of sight: the fix is unsafe outside the guard) could
backpropagate through the retained graph. Exactness is executed with the guard
opened (`if True:`), since the harness runs a snippet as an imported module.
"""

from __future__ import annotations

import pytest

from gradfix.engine import lint_bytes, prefilter
from gradfix.options import LintOptions
from gradfix.rules import gf005_needless_retain_graph as gf005

HEAD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
"""

LOOP = HEAD + """

if __name__ == "__main__":
    for x, y in data:
        opt.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward(retain_graph=True)
        opt.step()
        print(loss.item())
"""

STRAIGHT = HEAD + """

if __name__ == "__main__":
    x, y = data[0]
    loss = F.mse_loss(net(x), y)
    loss.backward(retain_graph=True)
    opt.step()
"""


def _lint(src: str, fix: bool = False, unsafe: bool = False):
    result = lint_bytes(src.encode(), "train.py", LintOptions(("GF005",), fix=fix, unsafe_fixes=unsafe))
    assert result.error is None
    return result


def _exact(src: str, fixed: str) -> None:
    harness = pytest.importorskip("gradfix.harness")
    opened = src.replace('if __name__ == "__main__":', "if True:")
    report = harness.verify_pair(opened, fixed.replace('if __name__ == "__main__":', "if True:"), filename="train.py", device="cpu", repeat=0)
    assert report.error is None, report.error
    assert report.rows and all(r.ok for r in report.rows)


@pytest.mark.parametrize("src,line,col", [(LOOP, 15, 23), (STRAIGHT, 14, 19)], ids=["loop", "straight"])
def test_under_a_main_guard_the_fix_is_safe_and_exact(src, line, col):
    assert prefilter(src.encode(), [gf005]) == [gf005]
    (finding,) = _lint(src).findings
    assert (finding.line, finding.col, finding.fixable) == (line, col, True)
    assert "nothing later in " + ("this iteration or the next of " if src is LOOP else "") + "the module backpropagates" in finding.message
    fixed = _lint(src, fix=True).fixed.decode()
    assert fixed == src.replace("loss.backward(retain_graph=True)", "loss.backward()")
    _exact(src, fixed)


def test_outside_a_main_guard_the_fix_is_unsafe_but_exact_here():
    src = LOOP.replace('if __name__ == "__main__":\n', "if True:\n")
    (finding,) = _lint(src).findings
    assert not finding.fixable
    assert "module-level code outside `if __name__ == \"__main__\":` (line 15)" in finding.message
    _exact(src, _lint(src, fix=True, unsafe=True).fixed.decode())


@pytest.mark.parametrize(
    "change",
    [
        # a later backward of the module
        ("        print(loss.item())\n", "        print(loss.item())\n    loss.backward()\n"),
        # a later call of a function of the file that backpropagates
        ("        print(loss.item())\n", "        print(loss.item())\n    again()\n"),
        # a value carried from one iteration to the next
        ("        loss = F.mse_loss(net(x), y)\n", "        h = net(x) + h\n        loss = F.mse_loss(h, y)\n"),
        # a container from before the loop filled with tensors of the graph
        ("        print(loss.item())\n", "        print(loss.item())\n        outs.append(loss)\n"),
    ],
    ids=["later_backward", "later_backprop_function", "carried", "collected"],
)
def test_what_may_backpropagate_again_keeps_it_quiet(change):
    old, new = change
    src = LOOP.replace(old, new)
    src = src.replace("data = [", "outs = []\nh = torch.zeros(8, 1)\n\n\ndef again():\n    loss.backward()\n\n\ndata = [")
    assert new in src
    assert _lint(src).findings == []


def test_a_call_in_the_loop_not_proven_to_keep_nothing_makes_it_unsafe():
    src = LOOP.replace("import torch\n", "import torch\nfrom tracker import log_step\n").replace(
        "        print(loss.item())\n", "        log_step(loss)\n"
    )
    (finding,) = _lint(src).findings
    assert not finding.fixable
    assert "`log_step()` (line 18) is not proven to keep no tensor of this graph" in finding.message


def test_a_class_body_is_not_followed():
    src = HEAD + "\n\nclass Once:\n    x, y = data[0]\n    loss = F.mse_loss(net(x), y)\n    loss.backward(retain_graph=True)\n"
    assert _lint(src).findings == []


def test_main_guard_spellings():
    for test in ("'__main__' == __name__", "__name__ == '__main__'"):
        src = STRAIGHT.replace('__name__ == "__main__"', test)
        (finding,) = _lint(src).findings
        assert finding.fixable, test
    # Not the guard: a nested one, an `else` branch, another comparison.
    nested = STRAIGHT.replace('if __name__ == "__main__":\n', 'if True:\n  if __name__ == "__main__":\n')
    nested = nested.replace("\n    ", "\n      ")
    other = STRAIGHT.replace('__name__ == "__main__"', '__name__ != "__main__"')
    orelse = STRAIGHT.replace('if __name__ == "__main__":\n', 'if __name__ == "__main__":\n    pass\nelse:\n')
    for src in (nested, other, orelse):
        (finding,) = _lint(src).findings
        assert not finding.fixable


SCRIPT_WITH_OBJECTS = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)

if __name__ == "__main__":
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward(retain_graph=True)
            opt.step()
'''


def test_a_loop_over_objects_built_before_it_is_reported_with_an_unsafe_fix():
    # `model = Net()` and `loader = DataLoader(...)` may carry a tensor from one iteration to the
    # next (a module keeping its hidden state): named, as a function's parameters are.
    assert prefilter(SCRIPT_WITH_OBJECTS.encode(), [gf005]) == [gf005]
    (finding,) = _lint(SCRIPT_WITH_OBJECTS).findings
    assert (finding.line, finding.col, finding.fixable) == (27, 27, False)
    assert "`loader`, `model` come into the loop from before it" in finding.message
    assert "`opt`" not in finding.message  # an optimizer built from torch: proven
    # Here the model keeps no state: the unsafe rewrite is in fact exact.
    _exact(SCRIPT_WITH_OBJECTS, _lint(SCRIPT_WITH_OBJECTS, fix=True, unsafe=True).fixed.decode())


def test_a_module_level_tensor_read_in_the_loop_keeps_it_quiet():
    src = SCRIPT_WITH_OBJECTS.replace("loader = DataLoader", "h = model(torch.randn(4, 4))\nloader = DataLoader").replace(
        "            loss = F.mse_loss(model(x), y)\n", "            loss = F.mse_loss(model(x) + h.mean(), y)\n"
    )
    assert _lint(src).findings == []
