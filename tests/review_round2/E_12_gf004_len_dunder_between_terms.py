import torch
torch.set_num_threads(1)
torch.manual_seed(0)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


class State:
    pass


class Tracker:
    def __init__(self, st):
        self.st = st

    def __len__(self):
        self.st.prior = torch.softmax(self.st.prior * 2, -1)
        return 0


W = torch.randn(4, 4, requires_grad=True)
V = torch.randn(4, 4, requires_grad=True)
k = 3.0


def step():
    st = State()
    st.series = torch.softmax(W, -1)
    st.prior = torch.softmax(V, -1)
    tr = Tracker(st)
    rec = (W ** 2).mean()
    s_loss = torch.mean(kl(st.series, st.prior.detach()))
    n = len(tr)
    p_loss = torch.mean(kl(st.series.detach(), st.prior))
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()


step()
print("W", round(W.grad.abs().sum().item(), 6), "V", round(V.grad.abs().sum().item(), 6))
