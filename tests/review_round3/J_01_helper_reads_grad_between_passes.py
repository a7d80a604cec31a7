# GF004 safe fix: between the two backward calls a one-line helper of the file reads a gradient
# (`t.grad.norm()`); gradfix takes the helper as a pure function, so the merge moves the first pass
# past the read.
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0


def grad_norm(t):
    return t.grad.norm()


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


def step():
    series = [torch.softmax(W[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = 0.0
    p_loss = 0.0
    for u in range(len(series)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    print("W.grad norm after the first pass", grad_norm(W).item())
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


(W.sum() * 0).backward()  # W.grad starts as zeros
step()
print("W.grad norm", W.grad.norm().item())
print("V.grad norm", V.grad.norm().item())
