# GF003 safe merge wrong: `l1 + acc` runs `Acc.__radd__`, which keeps the loss in a module-level list; the caller backpropagates it through the graph the merged backward frees.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
kept = []


class Acc:
    def __radd__(self, other):
        kept.append(other)
        return self


acc = Acc()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    total = l1 + acc
    print(total is acc)


if __name__ == "__main__":
    step()
    kept[0].backward()
    print(w.grad.tolist())
