# GF003 safe merge wrong: `vars(builtins)["eval"]` evaluates a built string naming `w.register_hook`: clamp(g1) + clamp(g2) before, clamp(g1 + g2) after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
import builtins
vars(builtins)["eval"]("w.regis" + "ter_hook")(lambda g: g.clamp(-0.5, 0.5))


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
