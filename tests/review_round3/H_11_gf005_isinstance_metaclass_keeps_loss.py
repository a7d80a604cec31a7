# GF005 safe fix wrong (contrived): `isinstance(loss, Any)` runs the file's metaclass `__instancecheck__`,
# which keeps the loss. Rewrite raises.
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Meta(type):
    seen = []

    def __instancecheck__(cls, obj):
        Meta.seen.append(obj)
        return True


class Any(metaclass=Meta):
    pass


def step():
    h = w * 2
    loss = (h * h).sum()
    loss.backward(retain_graph=True)
    ok = isinstance(loss, Any)


if __name__ == "__main__":
    step()
    Meta.seen[0].backward()
    print(w.grad)
