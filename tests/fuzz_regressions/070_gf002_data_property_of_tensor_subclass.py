# Review regression (review of stop 20: `.data` as a stop-gradient; the fix was offered as safe).
# codes: GF002
# differs: the same as 10 in GF002's summed form: `z_e.data` on a tensor subclass of the file whose `data` property keeps the gradient; `z_e` passed as it is to F.mse_loss is taken as proof that `.data` stops it.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc_a = nn.Linear(6, 4)
enc_b = nn.Linear(6, 4)
batch = torch.randn(5, 6)
BETA = 0.25


class Live(torch.Tensor):
    @property
    def data(self):
        return self * 1.0


def step():
    z_e = enc_a(batch).as_subclass(Live)
    z_q = enc_b(batch)
    loss = F.mse_loss(z_q, z_e.data) + BETA * F.mse_loss(z_q.data, z_e)
    loss.backward()
