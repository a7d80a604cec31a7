# GF003 safe merge wrong: `print(opt)` between the passes runs torch's `Optimizer.__repr__`, which reads `self.param_groups`, a property of the file whose getter reads `w.grad`: round 14 proved the Optimizer base calls no method of a subclass, but its special methods read attributes a property overrides: the first pass's gradient sum before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Logged(torch.optim.Optimizer):
    def __init__(self, params):
        self._groups = []
        super().__init__(params, {"lr": 0.1})

    @property
    def param_groups(self):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))
        return self._groups

    @param_groups.setter
    def param_groups(self, value):
        self._groups = value


opt = Logged([torch.zeros(1, requires_grad=True)])


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(opt)
    l2.backward()


if __name__ == "__main__":
    seen.clear()
    step()
    print(seen)
    print(w.grad.tolist())
