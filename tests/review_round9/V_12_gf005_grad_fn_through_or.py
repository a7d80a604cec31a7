# GF005 safe fix wrong: `node = loss.grad_fn or None` holds the node (`or` gives an operand, not a bool), and `node.next_functions[0][0]._saved_result` reads a saved tensor: `retain_graph=True` kept it, the fix frees it and the read raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    node = loss.grad_fn or None
    print(node.next_functions[0][0]._saved_result.sum().item())


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
