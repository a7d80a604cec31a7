# GF005 safe fix wrong: `if fin.again:` reads a property of the file that backpropagates the loss again.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    @property
    def again(self):
        loss.backward()
        return True


if __name__ == "__main__":
    fin = Fin()
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w.grad.tolist())
    if fin.again:
        pass
    print(w.grad.tolist())
