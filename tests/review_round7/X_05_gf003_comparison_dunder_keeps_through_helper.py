# GF003 safe merge wrong: `max(l1, acc)` runs `Acc.__gt__`/`__lt__`, which keep the loss through a helper function of the file; the caller backpropagates it through the graph the merged backward frees.
import heapq
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
kept = []
def record(x):
    kept.append(x)


class Acc:
    def __lt__(self, other):
        record(other)
        return False

    def __gt__(self, other):
        record(other)
        return True


acc = Acc()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    print(max(l1, acc) is acc)


def train():
    step()
    kept[0].backward()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
