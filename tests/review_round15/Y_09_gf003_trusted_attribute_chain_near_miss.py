# Near miss (safe, exact): module-level defs named as attributes read through a chain of attributes from torch (`torch.nn.functional.relu`, `torch.Tensor.add`), uncalled, with defs of the file by those names that change state: round 15's `_attribute_chain` keeps such a path from a trusted module off the file's defs.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def relu(x):
    seen.append(1)
    return x


def add(x, y):
    seen.append(2)
    return x


ops = [torch.nn.functional.relu, torch.Tensor.add]


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(len(ops))
    l2.backward()


if __name__ == "__main__":
    step()
    print(seen, relu(1), add(1, 2))
    print(w.grad.tolist())
