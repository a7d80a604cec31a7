# GF004 wrong safe fix reproducer. A walrus inside the operand (`series[(j := j + 1) % 3]`): the two evaluations read different items; merged into one.
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
        print("VAL", n, "=", json.dumps(None if t.grad is None else t.grad.tolist()))


def step():
    series = [torch.softmax(W[i], -1) for i in range(3)]
    prior = [torch.softmax(V[i], -1) for i in range(3)]
    rec = (W ** 2).mean()
    s_loss = 0.0
    p_loss = 0.0
    j = 0
    for u in range(2):
        s_loss += torch.mean(kl(series[(j := j + 1) % 3], prior[u].detach()))
        p_loss += torch.mean(kl(series[(j := j + 1) % 3].detach(), prior[u]))
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()


step()
report()
