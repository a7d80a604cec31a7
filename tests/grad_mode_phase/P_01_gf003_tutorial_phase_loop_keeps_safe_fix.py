# GF003 under `with torch.set_grad_enabled(phase == "train"):` with the backward under `if phase == "train":` (torch's fine-tuning tutorial): recording is on where the merged sum is built, so the merge is exact and safe.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
data = torch.randn(4, 3)
opt = torch.optim.SGD([w], lr=0.1)


def train():
    for epoch in range(2):
        for phase in ["train", "val"]:
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


if __name__ == "__main__":
    train()
    print(w.detach())
