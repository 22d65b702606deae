import torch
from sklearn.datasets import load_digits
from torch import nn


def train(config, ctx):                                    # one trial: this configuration, trained step by step
    torch.set_num_threads(ctx.threads)
    x, y = load_digits(return_X_y=True)                    # 8x8 digits, bundled with scikit-learn
    x, y = torch.tensor(x / 16, dtype=torch.float32), torch.tensor(y)
    model = nn.Sequential(nn.Linear(64, config["hidden"]), nn.ReLU(), nn.Linear(config["hidden"], 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)
    state = ctx.restore()                                  # None on a fresh start, else what report() saved
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    for step in ctx.steps():                               # one step = one epoch, up to R
        for batch in torch.randperm(1200).split(32):       # train on the first 1200 digits
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x[batch]), y[batch]).backward()
            optimizer.step()
        accuracy = (model(x[1200:]).argmax(1) == y[1200:]).float().mean().item()   # validate on the rest
        ctx.report(step, accuracy, state={"model": model.state_dict(), "optimizer": optimizer.state_dict()})
