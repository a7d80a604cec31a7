# GF003 safe merge wrong: `again = staticmethod(torch.Tensor.backward)` in the class body, called `self.again(l1)` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Trainer:
    again = staticmethod(torch.Tensor.backward)

    def step(self):
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        print(w.grad.tolist())
        self.again(l1)
        print(w.grad.tolist())


if __name__ == "__main__":
    Trainer().step()
