# GF005 safe fix wrong: `self.train(loss)` is trusted because `train` is in MODULE_LEAF_METHODS, whatever
# the receiver and arguments; here it is a method of the file that keeps the loss. Rewrite raises.
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Trainer:
    def train(self, loss):
        self.kept = loss

    def step(self):
        h = (w * 2).tanh()
        loss = h.sum()
        loss.backward(retain_graph=True)
        self.train(loss)


if __name__ == "__main__":
    t = Trainer()
    t.step()
    t.kept.backward()
    print(w.grad)
