"""A stand-in for pytorch_lightning's LightningModule, reduced to what manual_backward does under
precision="16-mixed": the precision plugin scales the loss with its GradScaler, then backward."""
import torch


class LightningModule(torch.nn.Module):
    scaler_scale = 1024.0  # the GradScaler's current scale

    def manual_backward(self, loss, *args, **kwargs):
        (loss * self.scaler_scale).backward(*args, **kwargs)
