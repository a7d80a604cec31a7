# GF001 safe fix, wrong: x is an instance of a tensor subclass of the file whose __torch_function__ counts the F.mse_loss calls on it; the original calls F.mse_loss twice, the rewrite once: the printed count differs (2 vs 1).
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
calls = []


class Traced(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is F.mse_loss:
            calls.append(1)
        return super().__torch_function__(func, types, args, kwargs or {})


x = torch.randn(6).as_subclass(Traced).requires_grad_()
y = torch.randn(6, requires_grad=True)


def step():
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("calls", len(calls))
