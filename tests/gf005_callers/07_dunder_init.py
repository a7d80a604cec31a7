# GF005 safe fix in `__init__`, invoked as `Step(h)`: same hole as 02/03/04 (implicit dunder calls).
import torch
torch.set_num_threads(1)


class Step:
    def __init__(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    Step(h)
    Step(h)
    print([round(v, 5) for v in w.grad.tolist()])
