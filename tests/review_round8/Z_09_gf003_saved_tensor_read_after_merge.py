# GF003 safe merge wrong: after the passes, `l1.grad_fn.next_functions[0][0]._saved_result` reads a tensor the first loss's graph saved: the original kept that graph (`retain_graph=True`), the merged backward frees it and the read raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    saved = l1.grad_fn.next_functions[0][0]._saved_result
    print(saved.sum().item())


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
