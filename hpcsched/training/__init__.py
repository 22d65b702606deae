"""Helpers for trainables: resizable data-parallel training (torch), the paper's large-batch rules.

Modules (import them directly; only ``schedule`` works without torch):

- ``schedule``: the learning-rate rules (sqrt batch scaling, +10%/epoch ramp restarted at every
  resize, step decays) as a small state machine saved with checkpoints.
- ``distributed``: process group, device, threads, DDP, sharding and the stop consensus for a
  trial's processes (one SLURM step's tasks or local processes with ``resources.distributed``).
- ``data``: batching over shards, torch-only augmentation, synthetic and on-disk image sets.
- ``resnet``: ResNets for 32x32 (CIFAR) and 224x224 (ImageNet) images, any width.
- ``loop``: ``train_classifier(config, ctx, recipe)``, the epoch loop the examples share.
- ``lightning``, ``huggingface``: a Lightning or transformers ``Trainer`` as a trial.

May import: ``trial`` and ``core``.
"""
