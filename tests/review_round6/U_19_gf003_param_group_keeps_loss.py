# GF003 safe merge wrong: the optimizer built after the merge keeps the loss in an extra param-group key; a global step hook of the file backpropagates it at `opt.step()`, through the graph the merged backward frees.
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def again(opt, args, kwargs):
    extra = opt.param_groups[0].get("extra")
    if extra is not None:
        extra.backward()


register_optimizer_step_post_hook(again)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    opt = torch.optim.SGD([{"params": [w], "extra": l1}], lr=0.0)
    opt.step()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
