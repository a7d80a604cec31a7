# GF005 safe fix wrong: the `assert` message is the loss tensor; AssertionError carries it (with its
# graph) out of the function, and the caller backpropagates it. Rewrite raises.
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    h = (w * 2).tanh()
    loss = h.sum()
    loss.backward(retain_graph=True)
    assert loss.item() > 100.0, loss


if __name__ == "__main__":
    try:
        step()
    except AssertionError as e:
        e.args[0].backward()
    print(w.grad)
