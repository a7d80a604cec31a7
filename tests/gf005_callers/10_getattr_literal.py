# GF005 and a method reached by its name as a string: `getattr(t, "step")(h)` calls `step`
# with a graph that is not proven free, twice (review, stop 24).
import torch

torch.set_num_threads(1)


class Trainer:
    def step(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    t = Trainer()
    getattr(t, "step")(h)
    getattr(t, "step")(h)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
