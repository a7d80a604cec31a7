# Near miss (safe, exact): a class of the file called, checked and subclassed, an `lru_cache` decorator and `lru_cache(f)(x)` called where it stands, `net.apply(init)` with no `apply` of the file, `atexit.register(f)` as a statement, and method names as strings printed or compared: nothing of the file is handed on.
import atexit
import functools

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
net = torch.nn.Linear(3, 1)


class Base:
    def __init__(self):
        self.kept = []


class Tracker(Base):
    def report(self) -> str:
        return "report"


@functools.lru_cache(maxsize=None)
def scale(k: int) -> float:
    return 2.0 * k


def goodbye():
    done.append(w.grad is not None)


atexit.register(goodbye)
done = []


def init(m):
    if isinstance(m, torch.nn.Linear):
        torch.nn.init.zeros_(m.bias)


def step(tracker: Tracker):
    l1 = (w * scale(1)).tanh().sum()
    l2 = (w * w).sum() * functools.lru_cache(scale)(1)
    l1.backward(retain_graph=True)
    print("report", isinstance(tracker, Base))
    l2.backward()


if __name__ == "__main__":
    net.apply(init)
    tracker = Tracker()
    print(tracker.report() == "report")
    step(tracker)
    print(w.grad.tolist())
