# GF005 and `getattr` handed on as a value (`get = getattr`): every name it is then given is unseen.
import torch

torch.set_num_threads(1)


class Trainer:
    def step(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    get = getattr
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    t = Trainer()
    get(t, "st" + "ep")(h)
    get(t, "st" + "ep")(h)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
