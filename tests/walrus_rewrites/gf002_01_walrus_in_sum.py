# GF002 safe fix hoists the one evaluation before the statement, past a walrus
# in the same statement that rebinds an operand (`z_e := ...`): the rewritten
# program evaluates mse_loss on the OLD z_e. Original runs fine.
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
BETA = 0.25


def step(x, z_q, w):
    z_e = x * w
    # an auxiliary norm penalty that also refines the encoding in one expression
    loss = 0.01 * (z_e := z_e * 2).pow(2).sum() + F.mse_loss(z_q, z_e.detach()) + BETA * F.mse_loss(z_q.detach(), z_e)
    return loss


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    w = torch.randn(3, requires_grad=True)
    z_q = torch.randn(4, 3, requires_grad=True)
    loss = step(x, z_q, w)
    loss.backward()
    print("loss", round(loss.item(), 6))
    print("w.grad", [round(v, 6) for v in w.grad.tolist()])
    print("z_q.grad[0]", [round(v, 6) for v in z_q.grad[0].tolist()])
