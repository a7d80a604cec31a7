# GF005 and a method reached by a computed name: `getattr(t, action)(h)`.
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
    for action in ["st" + "ep", "st" + "ep"]:
        getattr(t, action)(h)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
