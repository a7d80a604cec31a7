# GF004 wrong safe fix reproducer. The first term's name is updated in place (`s_loss += rec`) before the second term; the rewrite binds s_loss to the shared evaluation and
# takes p_loss = kl_shared.detach().clone() only after that in-place add, so p_loss's value changes; a value-dependent step (loss-spike guard) then changes the parameters.
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
optimizer = torch.optim.SGD([W, V], lr=0.1)


def step():
    optimizer.zero_grad()
    series = [torch.softmax(W[i], -1) for i in range(3)]
    prior = [torch.softmax(V[i], -1) for i in range(3)]
    rec = (W ** 2).mean()
    s_loss = torch.mean(kl(series[0], prior[0].detach()))
    s_loss += rec
    p_loss = torch.mean(kl(series[0].detach(), prior[0]))
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    if p_loss.item() < 1.0:  # skip steps on a loss spike
        optimizer.step()

    return p_loss.item()


for it in range(4):
    print("VAL p_loss_%d =" % it, step())
for n, t in [("W", W), ("V", V)]:
    print("VAL", n, "=", json.dumps(t.tolist()))
