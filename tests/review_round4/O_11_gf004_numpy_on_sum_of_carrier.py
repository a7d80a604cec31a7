# GF004 safe fix that crashes: (s_loss + 0).numpy() on the carrier: an expression of the carrier, not the carrier itself, so the numpy check misses it; RuntimeError after the rewrite.
# GF004 safe fix: `.numpy()` is read as a value, but the fix makes `s_loss` require grad where it did
# not (`series` comes from a frozen, constant source): the rewrite raises RuntimeError.
import torch

torch.manual_seed(0)
C = torch.randn(5, 4, 4)  # frozen teacher maps (no grad)
V = torch.randn(5, 4, 4, requires_grad=True)
W = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


def step():
    series = [torch.softmax(C[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = 0.0
    p_loss = 0.0
    for u in range(len(series)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    print("s", (s_loss + 0).numpy())
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


step()
print("V.grad norm", V.grad.norm().item())
