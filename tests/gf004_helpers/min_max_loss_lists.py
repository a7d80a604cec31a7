import torch
import torch.nn as nn

torch.manual_seed(0)


class AnomalyTransformer(nn.Module):
    def __init__(self, lambda_):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.prior = nn.Linear(4, 4)
        self.lambda_ = lambda_
        self.window_size = 4

    def forward(self, x):
        h = self.enc(x)
        self.P_layers = [torch.softmax(self.prior(h), -1), torch.softmax(self.prior(h * 2), -1)]
        self.S_layers = [torch.softmax(h, -1), torch.softmax(h * 3, -1)]
        self.output = h
        return h

    def association_discrepancy(self, P_list, S_list, x):
        return (1 / len(P_list)) * sum(
            [((P * (P / S).log()).sum(-1) + (S * (S / P).log()).sum(-1)) for P, S in zip(P_list, S_list)]
        )

    def loss_function(self, x_hat, P_list, S_list, lambda_, x):
        frob_norm = torch.linalg.matrix_norm(x_hat - x, ord="fro")
        return torch.mean(
            frob_norm - (lambda_ * torch.linalg.norm(self.association_discrepancy(P_list, S_list, x), ord=1, dim=1))
        ) / self.window_size

    def min_loss(self, x):
        P_list = self.P_layers
        S_list = [S.detach() for S in self.S_layers]
        lambda_ = -self.lambda_
        return self.loss_function(self.output, P_list, S_list, lambda_, x)

    def max_loss(self, x):
        P_list = [P.detach() for P in self.P_layers]
        S_list = self.S_layers
        lambda_ = self.lambda_
        return self.loss_function(self.output, P_list, S_list, lambda_, x)

    def training_step(self, x, optimizer):
        self(x)
        min_loss = self.min_loss(x)
        max_loss = self.max_loss(x)
        optimizer.zero_grad()
        min_loss.backward(retain_graph=True)
        max_loss.backward()
        optimizer.step()


model = AnomalyTransformer(3.0)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step():
    model.training_step(torch.randn(2, 4, 4), opt)
