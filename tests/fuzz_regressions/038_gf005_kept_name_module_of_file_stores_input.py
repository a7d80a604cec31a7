# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF005
# differs: the same for GF005.
import torch
import torch.nn as nn

torch.manual_seed(0)
store = []


class Keep(nn.Module):
    def forward(self, x):
        store.append(x)
        return x


G = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), Keep(), nn.Linear(8, 3))
D = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
crit = nn.BCEWithLogitsLoss()
optD = torch.optim.SGD(D.parameters(), lr=0.1)
optG = torch.optim.SGD(G.parameters(), lr=0.1)
real = torch.randn(16, 3)
ones = torch.ones(16, 1)
zeros = torch.zeros(16, 1)


def step():
    optD.zero_grad()
    fake = G(torch.randn(16, 4))
    loss_real = crit(D(real), ones) + 0.1 * store[-1].pow(2).sum()
    loss_real.backward(retain_graph=True)
    optD.step()
    optG.zero_grad()
    loss_g = crit(D(fake), ones)
    print(f"{float(loss_g):.3f}")
    loss_g.backward()
    optG.step()
