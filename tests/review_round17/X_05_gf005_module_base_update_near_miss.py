# Near miss (GF005): `nn.Module` calls no method named `update` of a subclass: its callers are the file's, the fix stays safe.
import torch

torch.manual_seed(0)


class Bank(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))

    def update(self, batch):
        loss = (self.w * batch["h"]).pow(2).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    bank = Bank()
    bank.update({"h": torch.arange(3.0)})
    bank.update({"h": torch.ones(3)})
    print(bank.w.grad)
