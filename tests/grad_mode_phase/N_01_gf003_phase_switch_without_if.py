# GF003 unsafe: the backward stands under `with torch.set_grad_enabled(phase == "train"):` but under no `if phase == "train":`; in the "val" phase recording is off where the merged sum is built (the losses were built before, with recording on): the original backpropagates, the merged sum has no graph and raises.
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
            l1.backward(retain_graph=True)
            l2.backward()
        print(phase, w.grad)


if __name__ == "__main__":
    train()
