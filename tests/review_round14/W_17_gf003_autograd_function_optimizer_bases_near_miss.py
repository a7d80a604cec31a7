# Near miss (safe, exact): a custom autograd Function (its `forward` saves a tensor: it runs at `Double.apply`, judged where it stands) and a custom optimizer whose `step` changes state, classes whose torch bases call none of their methods from a harmless call: round 14's proof of bases keeps the merge safe.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2


class Counting(torch.optim.Optimizer):
    def __init__(self, params):
        super().__init__(params, {"lr": 0.1})
        self.steps = 0

    def step(self, closure=None):
        self.steps += 1


def step():
    l1 = Double.apply(w).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("x")
    l2.backward()


if __name__ == "__main__":
    opt = Counting([torch.zeros(1, requires_grad=True)])
    opt.step()
    step()
    print(opt.steps, w.grad.tolist())
