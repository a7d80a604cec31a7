"""Anomaly-transformer min-max training step (association discrepancy over layers).

A small Anomaly-Transformer-style reconstruction model: an embedding
(linear token embedding + sinusoidal positions), a stack of encoder layers
whose anomaly attention returns, besides its output, a series association
(softmax of q·k) and a learned Gaussian prior association (per-head,
per-position width sigma), both batch × heads × L × L, and a linear
projection back to the input channels.  The training step is the original
solver's: per layer, two symmetric KL terms of series against the
row-normalised prior, accumulated into `series_loss` (prior detached) and
`prior_loss` (series detached), averaged over layers; `loss1 = rec - k·series`
(maximise the discrepancy for the series branch) and `loss2 = rec + k·prior`
(minimise it for the prior branch), `loss1.backward(retain_graph=True)`,
`loss2.backward()`, Adam step.

gradfix (default rules): GF004 twice (each KL term is the same computation
in both losses up to complementary `.detach()`: evaluated once per layer,
the first evaluation carrying both gradients through `grad_scale(..., -1.0)`,
the second replaced by its detached value) and GF003 once (the two backward
calls become one backward of `loss1 + loss2`, so the encoder is traversed
once).  `my_kl_loss` is a module-level helper of torch ops, so the fixes are
SAFE; `loss1` is read elsewhere only through `.item()`.

Size: GRADFIX_BENCH_SIZE=small|large (default small).
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = os.environ.get("GRADFIX_BENCH_SIZE", "small")
# batch, window length, input channels, model width, heads, feed-forward width, encoder layers
BATCH, WIN_SIZE, C_IN, D_MODEL, N_HEADS, D_FF, E_LAYERS = {
    "small": (8, 32, 8, 32, 4, 64, 2),
    "large": (8, 100, 38, 64, 8, 128, 3),
}[SIZE]
K = 3.0


def my_kl_loss(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=1)


class DataEmbedding(nn.Module):
    def __init__(self, c_in, d_model, max_len):
        super().__init__()
        self.value_embedding = nn.Linear(c_in, d_model)
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.value_embedding(x) + self.pe[: x.shape[1]]


class AnomalyAttention(nn.Module):
    """Returns the attention output, the series association and the (unnormalised) Gaussian prior."""

    def __init__(self, d_model, n_heads, win_size):
        super().__init__()
        self.n_heads = n_heads
        self.query_projection = nn.Linear(d_model, d_model)
        # No key bias: a key bias cannot change a softmax over keys, so its gradient
        # is exactly zero and Adam would turn rounding noise there into full-size steps.
        self.key_projection = nn.Linear(d_model, d_model, bias=False)
        self.value_projection = nn.Linear(d_model, d_model)
        self.sigma_projection = nn.Linear(d_model, n_heads)
        self.out_projection = nn.Linear(d_model, d_model)
        idx = torch.arange(win_size, dtype=torch.float32)
        self.register_buffer("distances", (idx[:, None] - idx[None, :]).abs())

    def forward(self, x):
        b, n, d = x.shape
        h, dk = self.n_heads, d // self.n_heads
        queries = self.query_projection(x).view(b, n, h, dk).transpose(1, 2)
        keys = self.key_projection(x).view(b, n, h, dk).transpose(1, 2)
        values = self.value_projection(x).view(b, n, h, dk).transpose(1, 2)
        series = torch.softmax(queries @ keys.transpose(-1, -2) / math.sqrt(dk), dim=-1)
        sigma = self.sigma_projection(x).transpose(1, 2)  # B x H x L
        sigma = torch.sigmoid(sigma * 5) + 1e-5
        sigma = torch.pow(3, sigma) - 1
        sigma = sigma.unsqueeze(-1).repeat(1, 1, 1, n)  # B x H x L x L
        prior = 1.0 / (math.sqrt(2 * math.pi) * sigma) * torch.exp(-self.distances**2 / 2 / (sigma**2))
        out = (series @ values).transpose(1, 2).reshape(b, n, d)
        return self.out_projection(out), series, prior


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, win_size):
        super().__init__()
        self.attention = AnomalyAttention(d_model, n_heads, win_size)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        new_x, series, prior = self.attention(x)
        x = self.norm1(x + new_x)
        y = self.ff2(F.gelu(self.ff1(x)))
        return self.norm2(x + y), series, prior


class AnomalyTransformer(nn.Module):
    def __init__(self, win_size, c_in, d_model, n_heads, d_ff, e_layers):
        super().__init__()
        self.embedding = DataEmbedding(c_in, d_model, win_size)
        self.layers = nn.ModuleList([EncoderLayer(d_model, n_heads, d_ff, win_size) for _ in range(e_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.projection = nn.Linear(d_model, c_in)

    def forward(self, x):
        enc = self.embedding(x)
        series_list, prior_list = [], []
        for layer in self.layers:
            enc, series, prior = layer(enc)
            series_list.append(series)
            prior_list.append(prior)
        return self.projection(self.norm(enc)), series_list, prior_list


model = AnomalyTransformer(WIN_SIZE, C_IN, D_MODEL, N_HEADS, D_FF, E_LAYERS)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
criterion = nn.MSELoss()
input_x = torch.randn(BATCH, WIN_SIZE, C_IN)
loss1_list = []


def step():
    optimizer.zero_grad()
    output, series, prior = model(input_x)

    # calculate Association discrepancy
    series_loss = 0.0
    prior_loss = 0.0
    for u in range(len(prior)):
        series_loss += torch.mean(
            my_kl_loss(
                series[u],
                (prior[u] / torch.unsqueeze(torch.sum(prior[u], dim=-1), dim=-1).repeat(1, 1, 1, WIN_SIZE)).detach(),
            )
        ) + torch.mean(
            my_kl_loss(
                (prior[u] / torch.unsqueeze(torch.sum(prior[u], dim=-1), dim=-1).repeat(1, 1, 1, WIN_SIZE)).detach(),
                series[u],
            )
        )
        prior_loss += torch.mean(
            my_kl_loss(
                (prior[u] / torch.unsqueeze(torch.sum(prior[u], dim=-1), dim=-1).repeat(1, 1, 1, WIN_SIZE)),
                series[u].detach(),
            )
        ) + torch.mean(
            my_kl_loss(
                series[u].detach(),
                (prior[u] / torch.unsqueeze(torch.sum(prior[u], dim=-1), dim=-1).repeat(1, 1, 1, WIN_SIZE)),
            )
        )
    series_loss = series_loss / len(prior)
    prior_loss = prior_loss / len(prior)

    rec_loss = criterion(output, input_x)

    loss1_list.append((rec_loss - K * series_loss).item())
    loss1 = rec_loss - K * series_loss
    loss2 = rec_loss + K * prior_loss

    # Minimax strategy
    loss1.backward(retain_graph=True)
    loss2.backward()
    optimizer.step()
