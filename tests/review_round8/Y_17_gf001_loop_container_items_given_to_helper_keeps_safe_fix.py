# GF001 near-miss (found by the property test after round 8): a module-level list of leaf tensors whose items the loop hands to a loss helper of the file that only reads its parameters keeps its safe fix (`loops._reading_helpers`).
import torch

torch.manual_seed(0)
preds = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]
targets = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]


def loss_fn(u, v):
    return torch.mean((u - v) ** 2)


def step():
    for i in range(2):
        a = loss_fn(u=preds[i], v=targets[i].detach())
        a.backward(retain_graph=True)
        b = loss_fn(u=preds[i].detach(), v=targets[i])
        b.backward()


if __name__ == "__main__":
    step()
    print(preds[0].grad, targets[1].grad)
