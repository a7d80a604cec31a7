# GF004 wrong safe fix reproducer. Accumulators aliasing one tensor through `p_loss = torch.zeros(())`, in-place `+=`.
# Prints the gradients of the leaves W (series) and V (prior) after one step.
import json
import torch
torch.set_num_threads(1)
torch.manual_seed(0)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


W = torch.randn(3, 4, 4, requires_grad=True)
V = torch.randn(3, 4, 4, requires_grad=True)
k = 3.0


def report():
    for n, t in [("W", W), ("V", V)]:
        print("VAL", n, "=", None if t.grad is None else round(t.grad.abs().sum().item(), 6))


def step():
    series = [torch.softmax(W[i], -1) for i in range(3)]
    prior = [torch.softmax(V[i], -1) for i in range(3)]
    rec = (W ** 2).mean()
    s_loss, p_loss = [torch.zeros(())] * 2
    for u in range(len(series)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    loss1 = rec - k * s_loss
    loss2 = rec + 2 * k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()


step()
report()
