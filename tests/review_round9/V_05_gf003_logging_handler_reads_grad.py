# GF003 safe merge wrong: `log.info(...)` between the passes runs the file's `logging.Handler.emit`, which reads `w.grad`: 1.4433 before, 0.0 after the merge.
import logging

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class GradHandler(logging.Handler):
    def emit(self, record):
        print(record.getMessage(), 0.0 if w.grad is None else round(w.grad.norm().item(), 4))


log = logging.getLogger("train")
log.setLevel(logging.INFO)
log.addHandler(GradHandler())
log.propagate = False


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    log.info("after the first loss")
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
