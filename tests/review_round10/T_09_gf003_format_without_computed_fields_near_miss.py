# Near miss (safe, exact): `str.format` between the passes in a file whose class computes an attribute (`scaled`, a pure property): the template's fields name no computed attribute (`{0:.4f}`, `{0.real:.4f}`, `{k}`), so no code of the file runs.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Scale:
    @property
    def scaled(self):
        return 1.5 * 2


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("{0:.4f} {0.real:.4f} {k}".format(l1.item(), k=2))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
