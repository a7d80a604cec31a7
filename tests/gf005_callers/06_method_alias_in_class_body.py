# GF005 safe fix on a method called through a class-body alias (`run = step`, then `t.run(h)`):
# callers of a method are matched only as `x.step(...)`; the bare-name reference `step` in the
# class body is not seen. The caller passes one graph twice; after the fix the second call raises.
import torch
torch.set_num_threads(1)


class Trainer:
    def step(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)

    run = step


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    t = Trainer()
    t.run(h)
    t.run(h)
    print([round(v, 5) for v in w.grad.tolist()])
