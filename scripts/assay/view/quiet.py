"""Background passes yield to the requests being answered.

The server is one Python process: a pass over every case (the gate's evaluation, the per-case
verdict pass) running beside the first page's request shares the interpreter with it and slows it
several times. So a pass calls `wait_quiet()` between units of work and goes on only when no
request is being answered (or after `max_wait` s, so a stream of requests cannot starve it). A
request that itself waits for a pass marks that wait with `waiting()`.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

_COND = threading.Condition()
_BUSY = [0]
_MINE = threading.local()


@contextmanager
def busy():
    """Around answering one request."""
    with _COND:
        _BUSY[0] += 1
    _MINE.busy = True
    try:
        yield
    finally:
        _MINE.busy = False
        with _COND:
            _BUSY[0] -= 1
            _COND.notify_all()


@contextmanager
def waiting():
    """Inside busy(): this request now waits for a background pass, so it does not hold it back."""
    if not getattr(_MINE, "busy", False):
        yield
        return
    with _COND:
        _BUSY[0] -= 1
        _COND.notify_all()
    try:
        yield
    finally:
        with _COND:
            _BUSY[0] += 1


def wait_quiet(max_wait: float = 2.0) -> None:
    """Return once no request is being answered, or after `max_wait` seconds."""
    deadline = time.monotonic() + max_wait
    with _COND:
        while _BUSY[0] > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            _COND.wait(left)
