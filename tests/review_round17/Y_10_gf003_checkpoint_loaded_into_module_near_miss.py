# Near miss (safe, exact): a checkpoint read back by `torch.load` (what it gives followed as instances of any module class of the file) only loaded into the module and the optimizer by `load_state_dict`, a module of the file kept in the file and the collector run (`gc.collect()`): no `forward` is handed on.
import gc
import io

import torch
from torch import nn

torch.manual_seed(0)
seen = []


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        seen.append(1)
        return self.lin(x).tanh()


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
buf = io.BytesIO()
torch.save({"model": Net().state_dict(), "opt": opt.state_dict()}, buf)
buf.seek(0)
ckpt = torch.load(buf)
model.load_state_dict(ckpt["model"])
opt.load_state_dict(ckpt["opt"])
gc.collect()
x = torch.ones(2, 3)


def step():
    out = model(x)
    l1 = out.sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(model.training)
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), [round(p.grad.sum().item(), 5) for p in model.parameters()])
