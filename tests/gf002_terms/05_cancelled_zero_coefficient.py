# GF002 coefficient algebra cancels `ZERO * e / ZERO` to 1 (linear._cancel), which is
# wrong when the symbol is 0 (or inf): the original's gradient is NaN, the fix's finite.
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
W_COMMIT = 0.0  # commitment disabled


def step(z_e, z_q):
    q = F.mse_loss(z_q, z_e.detach())
    e = F.mse_loss(z_q.detach(), z_e)
    return q + W_COMMIT * e / W_COMMIT


if __name__ == "__main__":
    torch.manual_seed(0)
    z_e = torch.randn(4, 3, requires_grad=True)
    z_q = torch.randn(4, 3, requires_grad=True)
    loss = step(z_e, z_q)
    loss.backward()
    print("loss", round(loss.item(), 6))
    print("z_e.grad[0]", [round(v, 6) for v in z_e.grad[0].tolist()])
