# GF003 safe merge wrong: a class statement between the passes whose body holds an instance made before (`d = dd`) runs `D.__set_name__` (no call by name), which reads `w.grad`: 1.4433 before, 0.0 after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

class D:
    def __set_name__(self, owner, name):
        print("g", 0.0 if w.grad is None else round(w.grad.norm().item(), 4))


dd = D()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    class K:
        d = dd
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
