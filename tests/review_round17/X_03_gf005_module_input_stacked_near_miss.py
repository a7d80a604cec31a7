# Near miss (GF005): a batch stacked as a module's input (`net(torch.stack(...))`) is data: the loss stays the function's own, the fix safe.
import torch

torch.manual_seed(0)
net = torch.nn.Linear(3, 1)


class Feed:
    def update(self, batch):
        loss = net(torch.stack(list(batch.values()))).pow(2).mean()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    Feed().update({"a": torch.ones(3), "b": torch.arange(3.0)})
    print(net.weight.grad, net.bias.grad)
