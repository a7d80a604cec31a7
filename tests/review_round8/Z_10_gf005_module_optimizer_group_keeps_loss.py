# GF005 safe fix wrong: at module level an optimizer's param group keeps the loss (`{"params": [w], "loss": loss}`); after the step, its graph's saved tensor is read through the group: without `retain_graph=True` that graph is freed and the read raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


if __name__ == "__main__":
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    opt = torch.optim.SGD([{"params": [w], "loss": loss}], lr=0.1)
    opt.step()
    node = opt.param_groups[0]["loss"].grad_fn.next_functions[0][0]
    print(node._saved_result.sum().item())
    print(w.grad.tolist())
