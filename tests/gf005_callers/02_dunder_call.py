# GF005 safe fix on a `__call__` method: gradfix checks the callers of a method
# only as `x.__call__(...)`, not the implicit `t(h)`. The caller passes the same
# graph twice; after the fix the second call raises.
import torch

torch.set_num_threads(1)


class Trainer:
    def __call__(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    t = Trainer()
    t(h)
    t(h)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
