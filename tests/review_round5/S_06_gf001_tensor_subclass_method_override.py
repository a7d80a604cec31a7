# GF001 safe fix, wrong: x is an instance of a tensor subclass of the file whose .mean() override logs each call (no __torch_function__ in the file); the callee's (a - b) is of that subclass, so .mean() runs twice in the original, once after the rewrite: the printed count differs.
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
calls = []


class Logged(torch.Tensor):
    def mean(self, *args, **kwargs):
        calls.append(1)
        return super().mean(*args, **kwargs)


x = torch.randn(6).as_subclass(Logged).requires_grad_()
y = torch.randn(6, requires_grad=True)


def dist(a, b):
    return ((a - b) ** 2).mean()


def step():
    l1 = dist(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -0.5 * dist(x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("calls", len(calls))
