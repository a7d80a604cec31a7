# GF001 near-miss (found by the property test after round 8): a module-level list of leaf tensors whose items the loop hands to `F.mse_loss` keeps its safe fix: a loss is a new tensor, holding nothing it was given (`loops._fresh_torch_call`).
import torch
import torch.nn.functional as F

torch.manual_seed(0)
v = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]
a00 = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]


def step():
    for _ in range(2):
        a0 = F.mse_loss(v[0], a00[1].detach())
        a0.backward(retain_graph=True)
        q = F.mse_loss(v[0].detach(), a00[1])
        q.backward()


if __name__ == "__main__":
    step()
    print(v[0].grad, a00[1].grad)
