# GF003 safe merge wrong: a saved_tensors_hooks unpack hook of the file runs once per backward pass per saved tensor; h's saved output is unpacked twice in two passes, once merged (random decompression noise: other gradients).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def pack(t):
    return t.half()  # compressed activation


def unpack(t):
    # stochastic rounding noise on decompression
    return t.float() + 1e-3 * torch.randn(t.shape)


def train():
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        h = torch.tanh(w)
        l1 = (h * 2).sum()
        l2 = (h * 3).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
