# GF003 safe merge wrong: a module backward hook put into the module's hook table by hand (`lin._backward_hooks[0] = scale_grads`, `lin._is_full_backward_hook = True`) runs once per backward pass and counts its calls: the merged pass runs it once, and the gradient differs.
import torch
import torch.nn as nn

torch.manual_seed(0)
lin = nn.Linear(3, 1)
calls = [0]


def scale_grads(module, grad_input, grad_output):
    calls[0] += 1
    return tuple(None if g is None else g * calls[0] for g in grad_input)


lin._backward_hooks[0] = scale_grads
lin._is_full_backward_hook = True
x = torch.randn(4, 3, requires_grad=True)


def train():
    h = lin(x)
    l1 = (h ** 2).sum()
    l2 = h.sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    train()
    print(x.grad)
