# GF003 unsafe: the `if` around the backward tests another condition than the switch (`phase != "val"` against `phase == "train"`); in the "test" phase recording is off and the `if` holds: the original backpropagates losses built with recording on, the merged sum has no graph and raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
data = torch.randn(4, 3)


def train():
    for phase in ["train", "val", "test"]:
        h = torch.tanh(data @ w)
        l1 = (h ** 2).mean()
        l2 = (h - 1).abs().mean()
        with torch.set_grad_enabled(phase == "train"):
            if phase != "val":
                l1.backward(retain_graph=True)
                l2.backward()
        print(phase, w.grad)


if __name__ == "__main__":
    train()
