# GF003 safe merge wrong: a tensor subclass of the file overrides `__add__` to log its calls (no `__torch_function__` in the file): none in the original, one for the merged sum `l1 + l2`.
import torch

torch.manual_seed(0)


class Logged(torch.Tensor):
    def __add__(self, other):
        print("add")
        return super().__add__(other)


w = torch.randn(3).as_subclass(Logged).requires_grad_()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print([round(v, 4) for v in w.grad.tolist()])
