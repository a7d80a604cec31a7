# Near miss (safe, exact): a class reached by `cls` only where that keeps it nowhere: a classmethod factory calling `cls(...)` and checking `isinstance(x, cls)`, `__init_subclass__` reading `cls.__name__`, `__new__` giving `cls` to `super().__new__`, an attribute stored on `cls`, a metaclass that defines no method, and `Base.__subclasses__()` compared: nothing of the file is handed on.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
names = []


class Plain(type):
    pass


class Base(metaclass=Plain):
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        names.append(cls.__name__)


class Scale(Base):
    made = None

    def __new__(cls, k):
        if cls.made is None:
            cls.made = super().__new__(cls)
        return cls.made

    def __init__(self, k):
        self.k = k

    @classmethod
    def make(cls, k):
        return cls(k)

    @classmethod
    def same(cls, other):
        return isinstance(other, cls)


def step(scale):
    l1 = (w * scale.k).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("between", len(names))
    l2.backward()


if __name__ == "__main__":
    scale = Scale.make(2.0)
    print(Scale.same(scale), Scale in Base.__subclasses__())
    step(scale)
    print(names)
    print(w.grad.tolist())
