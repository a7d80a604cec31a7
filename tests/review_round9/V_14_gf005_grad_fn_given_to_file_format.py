# GF005 safe fix wrong: `format(loss.grad_fn)` calls the file's `format`, not the builtin, which reads a tensor the graph saved: the fix frees the graph and the read raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def format(node):
    return node.next_functions[0][0]._saved_result.sum().item()


def step():
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(format(loss.grad_fn))


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
