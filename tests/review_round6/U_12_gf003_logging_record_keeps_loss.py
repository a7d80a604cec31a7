# GF003 safe merge wrong: `log.info("loss %s", l1)` keeps the loss in the record's args, which a MemoryHandler keeps; the caller backpropagates it through the graph the merged backward frees.
import logging
import logging.handlers

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
memory = logging.handlers.MemoryHandler(100)
log = logging.getLogger("u12")
log.addHandler(memory)
log.setLevel(logging.INFO)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    log.info("loss %s", l1)


if __name__ == "__main__":
    step()
    memory.buffer[0].args[0].backward()
    print(w.grad.tolist())
