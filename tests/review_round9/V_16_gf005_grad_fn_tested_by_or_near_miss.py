# Near miss (safe, exact): after the backward, the loss's `grad_fn` is only tested inside `and`/`or` (`if loss.grad_fn or ...`, `not (... and loss.grad_fn)`) : no saved tensor is read, and `retain_graph=True` is needless.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step(verbose=True):
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    if loss.grad_fn or verbose:
        print("graph")
    if not (verbose and loss.grad_fn):
        print("no graph")
    return loss.item()


if __name__ == "__main__":
    print(step())
    print(w.grad.tolist())
