# GF003 unsafe: the backward stands in the `else:` of `if phase == "train":`, where the switch turned recording off: the original backpropagates losses built with recording on, the merged sum has no graph and raises.
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
            if phase == "train":
                print("training")
            else:
                l1.backward(retain_graph=True)
                l2.backward()
        print(phase, w.grad)


if __name__ == "__main__":
    train()
