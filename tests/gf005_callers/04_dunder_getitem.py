# GF005 safe fix in `__getitem__`, invoked as `p[h]`: same hole as 02 for other dunders.
import torch

torch.set_num_threads(1)


class Probe:
    def __getitem__(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)
        return 0


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    p = Probe()
    p[h]
    p[h]
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
