# GF003 safe merge wrong: `Watched.most_common` has no base, so round 14's first cut read it as no library method; but `class Tally(Watched, Counter)` inherits it, and `print(tally)` between the passes runs `Counter.__repr__`, which calls it: it reads `w.grad`: the first pass's gradient sum before, `None` after the merge.
import collections

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Watched:
    def most_common(self, n=None):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))
        return super().most_common(n)


class Tally(Watched, collections.Counter):
    pass


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
