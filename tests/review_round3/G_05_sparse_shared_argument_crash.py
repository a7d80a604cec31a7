# GF001 safe fix that crashes: a sparse adjacency matrix shared by both calls (a GCN-style
# critic) is wrapped as `grad_scale(adj, 0.0)`, whose `view_as` is not implemented for
# sparse tensors: NotImplementedError.
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
adj = torch.eye(4).to_sparse()
x = torch.randn(4, 3, requires_grad=True)
y = torch.randn(4, 3, requires_grad=True)


def agg(a, h, g):
    return (torch.mm(a, h) * g).sum()


def step():
    l1 = agg(adj, x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * agg(adj, x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.flatten().tolist()])
print("y.grad", [round(v, 4) for v in y.grad.flatten().tolist()])
