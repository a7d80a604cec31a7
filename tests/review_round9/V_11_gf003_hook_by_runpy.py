# GF003 safe merge wrong: `runpy.run_path` runs a file the program writes, whose code (a built string) registers a clamping gradient hook: clamp(g1) + clamp(g2) before, clamp(g1 + g2) after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
import runpy, tempfile, os
p = os.path.join(tempfile.mkdtemp(), "h.py")
open(p, "w").write("w.regis" + "ter_hook(lambda g: g.clamp(-0.5, 0.5))")
runpy.run_path(p, init_globals={"w": w})


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
