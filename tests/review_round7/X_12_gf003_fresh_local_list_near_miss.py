# Near miss (safe, exact): `keep` is bound only to new lists in the function (no parameter, import or capture binds it), so `keep += [l1]` changes nothing from outside the call.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def other():
    v = (w * 3).sin().sum()
    v.backward()


def step(scale):
    keep = []
    if scale > 1:
        keep = [0.0]
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    keep += [l1]
    return len(keep)


def train():
    n = step(2)
    other()
    return n


if __name__ == "__main__":
    print(train())
    print(w.grad.tolist())
