# GF005 safe fix in an nn.Module's `forward`, invoked as `m(h)` (nn.Module.__call__):
# the callers `m(h)` are not seen as calls of `forward`. Second call raises after the fix.
import torch
import torch.nn as nn

torch.set_num_threads(1)


class Head(nn.Module):
    def forward(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)
        return loss.item()


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    m = Head()
    m(h)
    m(h)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
