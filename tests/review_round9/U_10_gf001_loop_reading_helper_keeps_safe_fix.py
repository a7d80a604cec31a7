# Reach (not a bug): a module-level list of leaf tensors whose items the loop hands to a helper of the file that only reads its parameters through torch's `F.mse_loss` and arithmetic, in a file whose class defines no operator special method: the merge stays safe.
import torch
import torch.nn.functional as F

torch.manual_seed(0)
preds = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]
targets = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]


class Log:
    def __init__(self):
        self.rows = []


def loss_fn(u, v):
    return F.mse_loss(u, v) + (u - v).abs().mean()


def step():
    for i in range(2):
        a = loss_fn(preds[i], targets[i].detach())
        a.backward(retain_graph=True)
        b = loss_fn(preds[i].detach(), targets[i])
        b.backward()


if __name__ == "__main__":
    log = Log()
    step()
    log.rows.append(1)
    print(preds[0].grad, targets[1].grad, len(log.rows))
