# Near miss (GF005 stays safe and exact): strings built of parts handed to `logging`, `re.compile`, `str.format` and `torch.compile`'s name reach no method: `update` is called once, with a graph-free argument.
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
    import logging
    import re
    pattern = re.compile("up" + "d")
    log = logging.getLogger("tr" + "ain")
    log.info("{}".format("st" + "ep"))
    fn = torch.compile if pattern is None else None
    print(round(t.update(h.detach()), 6), fn)



if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
