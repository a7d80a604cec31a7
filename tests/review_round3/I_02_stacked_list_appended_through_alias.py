# GF004 safe fix: `torch.stack(s_list).mean()` where `s_list` got one more item through an alias after the loop.
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


def step():
    series = [torch.softmax(W[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_list = []
    p_list = []
    pad = s_list  # the same list object
    for u in range(len(series)):
        s_list.append(torch.mean(kl(series[u], prior[u].detach())))
        p_list.append(torch.mean(kl(series[u].detach(), prior[u])))
    pad.append(torch.zeros(()))  # s_list now holds 6 items, p_list 5
    s_loss = torch.stack(s_list).mean()
    p_loss = torch.stack(p_list).mean()
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


step()
print("W.grad norm", W.grad.norm().item())
print("V.grad norm", V.grad.norm().item())
