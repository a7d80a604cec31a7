# GF005 safe fix wrong: `again = property(run)` in the class body makes reading `fin.again` run a method that backpropagates the loss again (no decorator, no call by name).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    def run(self):
        loss.backward()
        return True

    again = property(run)


if __name__ == "__main__":
    fin = Fin()
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w.grad.tolist())
    fin.again
    print(w.grad.tolist())
