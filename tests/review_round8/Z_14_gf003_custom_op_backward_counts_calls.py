# GF003 safe merge wrong: a custom operator's backward, registered by `register_autograd`, counts its calls: the two passes run it twice, the merged pass once, and the gradient differs (custom backwards were read only as methods of a class).
import torch

torch.manual_seed(0)
calls = [0]


@torch.library.custom_op("gradfix_review::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale.register_fake
def _(x):
    return torch.empty_like(x)


def _backward(ctx, grad):
    calls[0] += 1
    return grad * 2 * calls[0]


scale.register_autograd(_backward)

w = torch.randn(3, requires_grad=True)


def train():
    h = scale(w)
    l1 = (h ** 2).sum()
    l2 = h.sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
