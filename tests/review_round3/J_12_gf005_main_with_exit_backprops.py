# GF005 safe fix wrong: the `with` block's `__exit__` (a method of the file) backpropagates `loss` after
# the block; it runs after the backward but is entered (named) before it. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Finisher:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        loss.backward()


if __name__ == "__main__":
    with Finisher():
        h = (w * 2).tanh()
        loss = h.sum()
        loss.backward(retain_graph=True)
    print(w)
