# GF003 safe merge wrong: a nested function that backpropagates `l1` again is called through `or` (`(again or print)()`), after the merged backward freed the graph.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    def again():
        l1.backward()

    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    (again or print)()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
