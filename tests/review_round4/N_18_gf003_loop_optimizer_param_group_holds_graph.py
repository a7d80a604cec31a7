# GF003 safe merge wrong: torch.optim.* is taken graph-free whatever its arguments, but a param group dict keeps extra keys as they are ('prior': h with its graph); the merge frees it and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    opt = torch.optim.SGD([{"params": [w], "prior": h}], lr=0.0)
    for step in range(3):
        l1 = (opt.param_groups[0]["prior"] * w).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
