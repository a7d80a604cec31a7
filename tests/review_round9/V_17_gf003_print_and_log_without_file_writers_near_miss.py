# Near miss (safe, exact): `print(...)` and `log.info(...)` between the passes in a file that defines no method a print or a logger calls by protocol (`write`, `flush`, `emit`, `filter`, `format`, ...): they only show values.
import logging

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
log = logging.getLogger("near_miss")


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("first loss", round(l1.item(), 4))
    log.info("first loss %.4f", l1.item())
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
