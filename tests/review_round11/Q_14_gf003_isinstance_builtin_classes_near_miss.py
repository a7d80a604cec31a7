# Near miss (safe, exact): `isinstance` between the passes with builtin and torch classes, in a file whose class computes an attribute (a property).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class M:
    @property
    def gnorm(self):
        return 0.0 if w.grad is None else w.grad.norm().item()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(isinstance(l1, torch.Tensor), isinstance(l1, (int, float)))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
