# Near miss (safe, exact): a template naming no gradient (`"{0.shape}".format(w)`), a `keys` that changes nothing (`dict(m)`), a generator function that reads no gradient.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class M:
    def keys(self):
        return ["a"]

    def __getitem__(self, k):
        return 1


def pairs():
    yield 1
    yield 2


def step():
    m = M()
    gen = pairs()
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("{0.shape}".format(w), dict(m), {**m}, list(gen))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
