# Near miss (safe, exact): a def of the file as `sorted`'s and `max`'s `key=` (run there, not returned), `max` of numbers, a class with no base whose `run` changes state (no thread: run where it is called) and a method by a literal name through `getattr` called where it stands: nothing of the file is handed on.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
ranks = []


def rank(v):
    ranks.append(v)
    return -v


class Runner:
    def __init__(self):
        self.count = 0

    def run(self):
        self.count += 1
        return self.count


def step(runner):
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(max(1.0, 2.0), len(ranks))
    l2.backward()
    return getattr(runner, "run")()


if __name__ == "__main__":
    order = sorted([3, 1, 2], key=rank)
    top = max([3, 1, 2], key=rank)
    runner = Runner()
    runner.run()
    print(order, top, step(runner))
    print(w.grad.tolist())
