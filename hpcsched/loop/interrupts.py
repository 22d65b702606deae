"""Signals during a real run: what stops the controller (to be resumed) and what ends the run as its deadline."""

from __future__ import annotations

import signal
from typing import Any

from hpcsched.loop.controller import Controller

TIME_LIMIT_WARNING = 900.0  # a SIGUSR1 this close to the allocation's end is Slurm's --signal warning


def install_interrupts(controller: Controller, allocation_ends_at: float | None) -> dict[int, Any]:
    """SIGINT, SIGTERM and an early SIGUSR1 (preemption, ``scancel --signal=USR1``) stop the
    controller, to be resumed; SIGUSR1 near the allocation's time limit ends the run as its deadline."""
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:  # noqa: ARG001
        near_end = allocation_ends_at is not None and allocation_ends_at - controller.clock.now() <= TIME_LIMIT_WARNING
        if signum == signal.SIGUSR1 and near_end:
            controller.interrupt("the allocation's time limit is near (SIGUSR1)", at_deadline=True)
        else:
            controller.interrupt(f"interrupted by {signal.Signals(signum).name}")

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):  # USR1: SLURM's warning before the time limit
        previous[sig] = signal.signal(sig, handler)
    return previous


def restore_interrupts(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
