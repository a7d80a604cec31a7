# GF005 safe fix wrong: after the backward, the step logs a tensor the graph saved (`loss.grad_fn.next_functions[0][0]._saved_result`): `retain_graph=True` kept it, the fix frees it and the read raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(loss.grad_fn.next_functions[0][0]._saved_result.sum().item())


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
