# GF003 safe fix: a module dtype cast (`model.half()`) between the two backward calls.
# Original: l1's gradient is accumulated in float32, then converted to float16 with the
# parameters (overflowing to inf), then l2's gradient is added.
# Rewrite: the cast happens first, then one backward of l1 + l2 writes a float32 gradient.
import torch
import torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)

model = nn.Linear(3, 2)
x = torch.randn(4, 3)


def step():
    out = model(x)
    l1 = out.pow(2).sum() * 30000.0
    l2 = out.tanh().sum()
    l1.backward(retain_graph=True)
    model.half()
    l2.backward()


step()
for name, p in model.named_parameters():
    print(name, p.grad.dtype, p.grad.double().tolist())
