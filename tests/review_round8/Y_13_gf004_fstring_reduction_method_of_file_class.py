# GF004 safe fix, wrong printed value: `z = Window(2).mean()` runs the file's own `Window.mean`, which returns a 1-dim tensor (a full reduction was judged by its method name): `f'{s_loss * z}'` formats a 1-dim tensor, its str, `grad_fn` and all, after the rewrite only.
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0
C = torch.randn(5, 4, 4)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


class Window:
    def __init__(self, n):
        self.v = torch.ones(n)

    def mean(self):
        return self.v


def step():
    z = Window(2).mean()
    series = [torch.softmax(C[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = 0.0
    p_loss = 0.0
    for u in range(len(series)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    print('frozen', f'{s_loss * z}')
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


step()
print("W.grad norm", W.grad.norm().item())
print("V.grad norm", V.grad.norm().item())
