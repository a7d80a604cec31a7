# Fuzz regression 007 (found by a 20,000-step campaign, shrunk by hand).
# codes: GF003
# differs: the rewrite raises. `feats = {}` at module level is graph-free, but `feats["a"] = a * 2.0`
#   before the loop puts a tensor with a graph into it; the loop's two backward calls, merged into
#   `(l1 + l2).backward()`, free that graph in iteration 1 where the original's second call (which
#   reads only `feats["a"].detach()`) kept it: iteration 2 backpropagates through a freed graph.
import torch

a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
feats = {}


def step():
    feats["a"] = a * 2.0
    for it in range(2):
        l1 = (feats["a"] * b).sum()
        l1.backward(retain_graph=True)
        l2 = (feats["a"].detach() * b).sum()
        l2.backward()
