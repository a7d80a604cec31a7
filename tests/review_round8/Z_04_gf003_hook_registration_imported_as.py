# GF003 safe merge wrong: `register_multi_grad_hook` imported under another name (`as on_grads`) registers a hook gradfix does not see: it runs once per backward pass, twice before the merge, once after.
import torch
from torch.autograd.graph import register_multi_grad_hook as on_grads

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
norms = []
on_grads([w], lambda grads: norms.append(round(grads[0].norm().item(), 4)))


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist(), norms)
