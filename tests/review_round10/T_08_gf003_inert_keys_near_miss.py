# Near miss (safe, exact): `sorted`/`max`/`min` between the passes with keys that run no code of the file and read no attribute (`lambda kv: -kv[1]`, `abs`, `len`).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    pairs = [("a", 2.0), ("b", l1.item())]
    print(sorted(pairs, key=lambda kv: -kv[1]), max([3, 1], key=abs), min(["ab", "c"], key=len))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
