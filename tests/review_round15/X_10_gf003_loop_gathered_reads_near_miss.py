# Near miss (GF003 stays safe and exact): a container and a tensor read past a gathering step only for new values (`(bufs + [])[0].sum()`, `ident(buf).mean()`), and `.float()` of a tensor (`x.float() + 1`), keep the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    ident = torch.nn.Identity()
    bufs = [torch.ones(3)]
    x = torch.ones(3)
    buf = x.float()
    print(float((bufs + [])[0].sum()), float(ident(buf).mean()), (buf + 1).sum().item())
    for step in range(3):
        l1 = (bufs[0] * buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
