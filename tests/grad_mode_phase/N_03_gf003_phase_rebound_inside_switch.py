# GF003 unsafe: `phase` is rebound between the switch and the `if` (`phase = "train"`): the switch turned recording off in the "val" phase, the `if` then holds, and the merged sum built there has no graph and raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
data = torch.randn(4, 3)


def train():
    for phase in ["train", "val"]:
        h = torch.tanh(data @ w)
        l1 = (h ** 2).mean()
        l2 = (h - 1).abs().mean()
        with torch.set_grad_enabled(phase == "train"):
            phase = "train"
            if phase == "train":
                l1.backward(retain_graph=True)
                l2.backward()
        print(w.grad)


if __name__ == "__main__":
    train()
