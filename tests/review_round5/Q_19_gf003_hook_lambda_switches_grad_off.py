# GF003 safe merge wrong: an optimizer hook `lambda *a: torch.set_grad_enabled(False)` (in no name) turns recording off at `opt.step()`.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
opt.register_step_post_hook(lambda *a: torch.set_grad_enabled(False))


def step():
    with torch.enable_grad():
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    opt.step()
    step()
    torch.set_grad_enabled(True)
    print(w.grad.tolist())
