# GF003 safe merge wrong: `torch.nn.init.eye` is the deprecated alias of `eye_`, which fills its argument in place and returns it, though a name of `GRAPH_FREE_FACTORIES` under any `torch.` path was taken for a new tensor built without a graph: `buf` is `h` with its graph, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = w[:, None] * w[None, :]
    buf = torch.nn.init.eye(h)
    for step in range(3):
        l1 = (buf.sum(0) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
