# GF005 safe fix wrong: g.close() runs the generator's finally block, which backpropagates loss again.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def steps():
    try:
        yield 1
    finally:
        loss.backward()
        print("again", w.grad)


if __name__ == "__main__":
    g = steps()
    next(g)
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w)
    g.close()
