# GF003 safe merge wrong: a global forward hook (`nn.modules.module.register_module_forward_hook(lambda m, i, o: o + h)`) registered before the loop was seen nowhere the loop reads; it adds h (graph built before the loop) to every module output, the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    lin = nn.Linear(3, 3)
    nn.modules.module.register_module_forward_hook(lambda m, i, o: o + h)
    for step in range(3):
        l1 = lin(w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
