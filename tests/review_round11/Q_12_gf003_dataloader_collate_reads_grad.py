# GF003 safe merge wrong: `for batch in loader` between the passes runs the `collate_fn` the loader keeps (`collate`, handed to `DataLoader`), which reads `w.grad`: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
from torch.utils.data import DataLoader


def collate(items):
    return None if w.grad is None else w.grad.tolist()


loader = DataLoader([0], collate_fn=collate)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    for batch in loader:
        print(batch)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
