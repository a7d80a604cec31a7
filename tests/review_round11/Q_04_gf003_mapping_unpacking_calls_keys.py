# GF003 safe merge wrong: `{**m}` between the passes calls `m.keys()` (mapping unpacking, no call by name), which reads `w.grad`: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
class M:
    def keys(self):
        print("keys sees", None if w.grad is None else w.grad.tolist())
        return ["a"]

    def __getitem__(self, k):
        return 1

m = M()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    d = {**m}
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
