# GF005 and a function called through the module's namespace: `globals()["inner"](h)`.
import torch

torch.set_num_threads(1)


def inner(h):
    loss = (h * 2).sum()
    loss.backward(retain_graph=True)


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    name = "in" + "ner"
    globals()[name](h)
    globals()[name](h)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
