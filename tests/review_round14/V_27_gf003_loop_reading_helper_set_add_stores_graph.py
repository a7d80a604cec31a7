# GF003 safe merge wrong: a helper whose parameter is only the receiver of a `FRESH_METHODS` name (`return u.add(box[0])`) was taken to read what it is given, but `add` of a set (a container `_only_read` hands it: `put(bufs)`) stores its argument: `bufs` gets h's graph, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
bufs = set()
box = []


def put(u):
    return u.add(box[0])


def train():
    box.append((w * 2).tanh())
    put(bufs)
    for step in range(3):
        l1 = sum([(t * w).sum() for t in bufs])
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
