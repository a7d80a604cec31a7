# GF003 at module level under `with torch.set_grad_enabled(phase == "train"):`, the backward under `if phase == "train":`: recording is on where the merged sum is built; the merge is exact and safe.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
data = torch.randn(4, 3)
opt = torch.optim.SGD([w], lr=0.1)

for epoch in range(2):
    for phase in ("train", "val"):
        with torch.set_grad_enabled(phase == "train"):
            h = torch.tanh(data @ w)
            l1 = (h ** 2).mean()
            l2 = (h - 1).abs().mean()
            if phase == "train":
                opt.zero_grad()
                l1.backward(retain_graph=True)
                l2.backward()
                opt.step()
        print(phase, float(l1), float(l2))
print(w.detach())
