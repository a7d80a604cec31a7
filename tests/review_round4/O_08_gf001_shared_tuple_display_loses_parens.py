# GF001 safe fix that crashes: the shared argument is a tuple display (W, 2); tensor_value accepts it, but the rewrite writes grad_scale(W, 2, 0.0) (the tuple's parentheses are dropped): TypeError: grad_scale() takes 2 positional arguments but 3 were given.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)
W = torch.randn(6, requires_grad=True)


def critic(w, a, b):
    return (a * b * w[0]).sum() * w[1]


def step():
    l1 = critic((W, 2), x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * critic((W, 2), x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
