# GF003 safe fix: a gradient hook (clamping) registered in the file through getattr with a literal name.
# Original: clamp(g1) + clamp(g2); rewrite: clamp(g1 + g2).
import torch
torch.set_num_threads(1)
torch.manual_seed(0)

w = torch.randn(3, requires_grad=True)
x = torch.randn(5, 3)
getattr(w, "register_hook")(lambda g: g.clamp(-0.5, 0.5))


def step():
    out = x @ w
    l1 = out.pow(2).mean()
    l2 = out.tanh().mean()
    l1.backward(retain_graph=True)
    l2.backward()


step()
print("w.grad", w.grad.tolist())
