# GF003 safe merge wrong: `_plain_tensor` took `.to()` of any receiver for a tensor, whose reads as an operand make a new value; but `packed.to("cpu")` of a `PackedSequence` is the packed sequence itself, a tuple: `buf + ()` is a tuple of the same tensors, and `(buf + ())[0].copy_(h)` writes h's graph into `buf.data`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    packed = torch.nn.utils.rnn.PackedSequence(torch.zeros(3), torch.tensor([3]))
    buf = packed.to("cpu")
    (buf + ())[0].copy_(h)
    for step in range(3):
        l1 = (buf.data * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
