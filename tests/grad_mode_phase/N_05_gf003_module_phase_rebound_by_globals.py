# GF003 unsafe: at module level, `globals()["phase"] = "train"` rebinds `phase` between the switch and the `if` (no binding form shows it): in the "val" phase recording is off where the merged sum is built, which raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
data = torch.randn(4, 3)

for phase in ["train", "val"]:
    h = torch.tanh(data @ w)
    l1 = (h ** 2).mean()
    l2 = (h - 1).abs().mean()
    with torch.set_grad_enabled(phase == "train"):
        globals()["phase"] = "train"
        if phase == "train":
            l1.backward(retain_graph=True)
            l2.backward()
    print(w.grad)
