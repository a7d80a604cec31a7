"""GF005 and a loss the caller hands in: `def update(self, loss): loss.backward(retain_graph=True)`.

The caller built that graph and still holds the loss, and may backpropagate through it again after
the call (a generative sampler's `update(domain_loss)`, then the main loss through the same samples:
a held-out training file, stop 33). Dropping `retain_graph=True` there makes the caller's second
backward raise, so the fix is unsafe, for that reason; a loss the function builds itself from its
arguments (read as data, as the README's assumption about callers in other files says) keeps its
safe fix. Each program is executed (`check_case`)."""

from __future__ import annotations

import pytest

from tests.test_review_reproducers import check_case

_HANDED = {
    "parameter": ("def update(self, loss):", "        loss.backward(retain_graph=True)"),
    "alias": ("def update(self, loss):", "        total = loss\n        total.backward(retain_graph=True)"),
    "item_of_a_dict": ("def update(self, losses):", '        losses["d"].backward(retain_graph=True)'),
}

_PROGRAM = '''\
import torch

torch.manual_seed(0)


class Trainer:
    def __init__(self):
        self.w = torch.randn(3, requires_grad=True)
        self.opt = torch.optim.SGD([self.w], lr=0.1)

    {header}
        self.opt.zero_grad()
{backward}
        self.opt.step()


if __name__ == "__main__":
    t = Trainer()
    h = (t.w * 2).tanh()
    d = (h * h).sum()
    t.update({argument})
    g = (h * 3).sum()
    g.backward()
    print(t.w.grad)
'''


@pytest.mark.parametrize("name", sorted(_HANDED))
def test_a_loss_the_caller_hands_in_keeps_an_unsafe_fix(tmp_path, name):
    header, backward = _HANDED[name]
    argument = '{"d": d}' if "losses" in header else "d"
    path = tmp_path / "train.py"
    path.write_text(_PROGRAM.format(header=header, backward=backward, argument=argument))
    check_case(path, ("GF005", "is the caller's (the parameter `"))


def test_a_loss_built_in_the_function_from_its_arguments_keeps_its_safe_fix(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(
        _PROGRAM.format(
            header="def update(self, x):",
            backward="        loss = (self.w * x).pow(2).sum()\n        loss.backward(retain_graph=True)",
            argument="torch.ones(3)",
        ).replace("    g = (h * 3).sum()\n    g.backward()\n", "")
    )
    check_case(path, ("GF005", None))
