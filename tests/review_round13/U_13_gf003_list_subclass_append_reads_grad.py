# GF003 safe merge wrong: `history.append(...)` between the passes runs the `append` of a class of the file (`class History(list)`), which reads `w.grad` (round 12 asked the file for a method of the name for the harmless methods, not for `append`/`extend`): the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class History(list):
    def append(self, value):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))
        super().append(value)


history = History()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    history.append(l1.item())
    l2.backward()


if __name__ == "__main__":
    step()
    print(seen, len(history))
    print(w.grad.tolist())
