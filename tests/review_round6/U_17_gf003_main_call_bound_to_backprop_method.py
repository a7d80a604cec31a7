# GF003 safe merge wrong (module level): `__call__ = forward` makes `probe(l1)` run a method that backpropagates the loss whose graph the merged backward frees.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Probe:
    def forward(self, loss):
        loss.backward()

    __call__ = forward


probe = Probe()

if __name__ == "__main__":
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    try:
        probe(l1)
        print(w.grad.tolist())
    except RuntimeError as e:
        print("raised", str(e)[:30])
