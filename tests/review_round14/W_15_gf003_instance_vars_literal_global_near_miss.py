# Near miss (safe, exact): `vars(opts)` of an instance (it holds no def of the file), `globals()["SCALE"]` by a literal key naming no def, while a module-level def changes state: nothing of the file is handed on.
import types

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
SCALE = 2.0
kept = []


def record(value):
    kept.append(value)


def step(opts):
    l1 = (w * globals()["SCALE"]).tanh().sum()
    l2 = (w * w).sum() * opts.k
    l1.backward(retain_graph=True)
    print(len(kept))
    l2.backward()


if __name__ == "__main__":
    record(1)
    opts = types.SimpleNamespace(k=1.0)
    print(sorted(vars(opts)))
    step(opts)
    print(kept, w.grad.tolist())
