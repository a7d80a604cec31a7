# Near miss (safe, exact): a function that backpropagates its own graph runs outside the merging function, which holds no reference to it (its name only in a string): nothing after the merge may run it on this graph.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def other():
    v = (w * 3).sin().sum()
    v.backward()


def train():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    print("other", l1.item())


if __name__ == "__main__":
    other()
    train()
    print(w.grad.tolist())
