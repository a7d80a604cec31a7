# GF003 safe fix: a run mixing Lightning's self.manual_backward(l1, retain_graph=True) with a plain
# l2.backward() is merged into a plain (l1 + l2).backward(): l1 loses what manual_backward does
# (precision plugin loss scaling under 16-mixed, on_before/after_backward hooks).
# Lightning is not installed here: run with PYTHONPATH=stub (a stand-in doing 16-mixed's scaling).
import torch
import torch.nn as nn
import pytorch_lightning as pl
torch.set_num_threads(1)
torch.manual_seed(0)


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def training_step(self, x):
        out = self.lin(x)
        l1 = out.pow(2).mean()
        l2 = out.tanh().mean()
        self.manual_backward(l1, retain_graph=True)
        l2.backward()


m = Model()
m.training_step(torch.randn(5, 3))
print([p.grad.tolist() for p in m.parameters()])
