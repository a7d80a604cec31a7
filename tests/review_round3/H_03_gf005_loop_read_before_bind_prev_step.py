# GF005 safe fix wrong: `h_prev` is read (step > 0) before it is bound later in the same loop body, so it
# carries the previous iteration's graph; bound-inside-the-loop is taken as fresh. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(3):
        h = (w * (step + 1)).tanh()
        loss = h.sum()
        if step > 0:
            loss = loss + (h - h_prev).pow(2).sum()  # temporal consistency
        loss.backward(retain_graph=True)
        h_prev = h


if __name__ == "__main__":
    train()
    print(w.grad)
