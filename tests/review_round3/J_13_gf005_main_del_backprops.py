# GF005 safe fix wrong: `Holder.__del__` backpropagates the kept loss when `del holder` runs; `Holder(loss)`
# is read as a call of `__init__` only. Rewrite raises (printed as an ignored exception in __del__).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Holder:
    def __init__(self, loss):
        self.loss = loss

    def __del__(self):
        self.loss.backward()
        print("__del__ ok")


if __name__ == "__main__":
    h = (w * 2).tanh()
    loss = h.sum()
    loss.backward(retain_graph=True)
    holder = Holder(loss)
    del holder
    print(w)
