# GF003 safe merge wrong: the tensor subclass's `__torch_function__` logs every torch call, `Tensor.backward` included: two backward calls in the original, one `add` and one backward after the merge.
import torch

torch.manual_seed(0)
calls = []


class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        calls.append(getattr(func, "__name__", "?"))
        return super().__torch_function__(func, types, args, kwargs or {})


w = torch.randn(3).as_subclass(Logged).requires_grad_()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print(calls)
    print([round(v, 4) for v in w.grad.tolist()])
