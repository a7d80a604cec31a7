# GF003 safe merge wrong: a step pre-hook of the file, registered in another method, backpropagates the stored loss at `self.opt.step()`.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Trainer:
    def setup(self):
        self.opt = torch.optim.SGD([w], lr=0.1)
        self.opt.register_step_pre_hook(self.again)
        self.keep = None

    def again(self, opt, args, kwargs):
        self.keep.backward()

    def train_step(self):
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
        self.keep = l1
        l1.backward(retain_graph=True)
        l2.backward()
        print(w.grad.tolist())
        self.opt.step()


if __name__ == "__main__":
    t = Trainer()
    t.setup()
    t.train_step()
