# Review regression (review of stop 20: `.data` as a stop-gradient; the fix was offered as safe).
# codes: GF001
# differs: a torch.Tensor subclass of the file overrides `data` (a property keeping the gradient) without mentioning `__torch_function__`: `fa` passed as it is to F.mse_loss proves it a tensor, not that `fa.data` stops the gradient (merge.MergeSafety._tensor_argument).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc_a = nn.Linear(6, 4)
enc_b = nn.Linear(6, 4)
batch = torch.randn(5, 6)


class Live(torch.Tensor):
    @property
    def data(self):
        return self * 1.0  # a tensor subclass whose `.data` keeps the gradient


def step():
    fa = enc_a(batch).as_subclass(Live)
    fb = enc_b(batch)
    pull_b = F.mse_loss(fa.data, fb)
    pull_b.backward(retain_graph=True)
    pull_a = 0.5 * F.mse_loss(fa, fb.data)
    pull_a.backward()
