# GF005 safe fix wrong: a `weakref.finalize` callback of the file, registered before the backward,
# backpropagates `loss` when `del run` runs after it. Rewrite raises (in the finalizer).
import weakref
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Run:
    pass


def finish():
    loss.backward()
    print("finalizer ok")


if __name__ == "__main__":
    run = Run()
    weakref.finalize(run, finish)
    h = (w * 2).tanh()
    loss = h.sum()
    loss.backward(retain_graph=True)
    del run
    print(w)
