import torch
import torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)

model = nn.Linear(3, 1)
cache = {}


def hook(mod, inp, out):
    if "o" in cache:
        return cache["o"]
    cache["o"] = out.tanh()
    return cache["o"]


model.register_forward_hook(hook)


def step(x):
    loss = model(x).sum()
    loss.backward(retain_graph=True)


if __name__ == "__main__":
    step(torch.ones(3))
    step(torch.ones(3))
    print("grad", [round(v, 5) for v in model.weight.grad.flatten().tolist()])
