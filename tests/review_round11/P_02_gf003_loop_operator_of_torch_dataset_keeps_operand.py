# GF003 safe merge wrong: `Dataset.__add__` (torch.utils.data, reached from `import torch` alone) returns a `ConcatDataset` holding its operand: `TensorDataset(...) + buf` keeps `buf` in `.datasets`, though torch was allowed whole in `_OPERAND_MODULES`; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = (torch.utils.data.TensorDataset(torch.zeros(0)) + buf).datasets[1]
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
