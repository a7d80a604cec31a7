import torch
torch.set_num_threads(1)

w = torch.ones(3, requires_grad=True)


def twice(f):
    def run():
        h = w.exp()
        f(h)
        f(h)
    return run


@twice
def inner(h):
    loss = torch.sum(h * 2)
    loss.backward(retain_graph=True)


if __name__ == "__main__":
    inner()
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
