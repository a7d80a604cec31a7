# GF003 safe merge wrong: a `threading.Thread` subclass of the file runs its `run` (started by `start()` before the passes, with no call by name) in another thread; `q.get(timeout=0.5)` between the passes waits for it to read `w.grad`: the first pass's gradient sum before, `queue.Empty` raised after the merge.
import queue
import threading
import time

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
q = queue.Queue()


class Watcher(threading.Thread):
    def run(self):
        while w.grad is None:
            time.sleep(0.001)
        q.put(round(w.grad.sum().item(), 4))


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    seen = q.get(timeout=0.5)
    l2.backward()
    return seen


if __name__ == "__main__":
    Watcher(daemon=True).start()
    print(step())
    print(w.grad.tolist())
