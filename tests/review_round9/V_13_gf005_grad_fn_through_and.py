# GF005 safe fix wrong: `node = loss.requires_grad and loss.grad_fn` holds the node, whose saved tensor is read after the backward: the fix frees the graph and the read raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    node = loss.requires_grad and loss.grad_fn
    print(node.next_functions[0][0]._saved_result.sum().item())


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
