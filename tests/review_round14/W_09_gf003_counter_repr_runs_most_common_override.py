# GF003 safe merge wrong: `print(tally)` between the passes runs `Counter.__repr__`, which calls `self.most_common()`, an override of the file that reads `w.grad`: round 12 counted only torch `Module`'s own calls of its methods (`_MODULE_SELF_CALLS`), not what another library base calls: the first pass's gradient sum before, `None` after the merge.
import collections

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Tally(collections.Counter):
    def most_common(self, n=None):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))
        return super().most_common(n)


tally = Tally("aab")


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(tally)
    l2.backward()


if __name__ == "__main__":
    step()
    print(seen)
    print(w.grad.tolist())
