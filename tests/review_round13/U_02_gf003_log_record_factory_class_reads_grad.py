# GF003 safe merge wrong: `logging.setLogRecordFactory(Record)` hands a class of the file to logging, which builds a record at `logging.warning(...)` between the passes: `Record.__init__` reads `w.grad`, the first pass's gradient before, `None` after the merge.
import logging

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Record(logging.LogRecord):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


logging.setLogRecordFactory(Record)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    logging.warning("first pass done")
    l2.backward()


if __name__ == "__main__":
    step()
    print(seen)
    print(w.grad.tolist())
