# GF003 near-miss (the field's GradNorm loop): `gradients = torch.autograd.grad(...)` is a tuple of tensors, iterated before the two backward calls; it is no way to backpropagate, and the merge of `l1.backward(retain_graph=True); l2.backward()` is exact.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
v = torch.randn(3, requires_grad=True)
data = torch.randn(4, 3)


def train():
    for step in range(2):
        h = torch.tanh(data @ w) * v.sum()
        l_aux = (h ** 2).mean()
        gradients = torch.autograd.grad(l_aux, [w, v], create_graph=True)
        norms = [g.norm() for g in gradients if g is not None]
        l1 = (h - 1).abs().mean()
        l2 = torch.stack(norms).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        print(float(l1), float(l2))


if __name__ == "__main__":
    train()
    print(w.grad, v.grad)
