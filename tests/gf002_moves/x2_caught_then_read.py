# As x1, and the handler backpropagates the first term: it is read as a tensor elsewhere.
import torch

torch.manual_seed(0)
codebook = torch.randn(4, 3, requires_grad=True)
z = torch.randn(4, 3, requires_grad=True)


def train(s):
    try:
        z_q = codebook * 1.0
        q_latent = torch.mean((z_q - z.detach()) ** 2)
        n = int(s)
        e_latent = torch.mean((z_q.detach() - z) ** 2)
        loss = q_latent + 0.25 * e_latent
        loss.backward()
    except ValueError:
        q_latent.backward()
    return z_q


def step():
    train("x")
    train("3")
