# Near miss (safe and exact): a local list named `vars` and strings that only mention the method's name among words (not a dotted path) keep the safe GF005 fix: `update` is called once, with a graph-free argument.
import torch

torch.manual_seed(0)


class Trainer:
    def __init__(self):
        self.w = torch.randn(2, requires_grad=True)
        self.opt = torch.optim.SGD([self.w], lr=0.1)

    def update(self, x):
        self.opt.zero_grad()
        loss = ((self.w * x) ** 2).sum()
        loss.backward(retain_graph=True)
        self.opt.step()
        return loss.item()


def drive(t, h):
    vars = [n for n in t.w.shape]
    print("update with", vars, "update the weights")
    print(round(t.update(h.detach()), 6))



if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
