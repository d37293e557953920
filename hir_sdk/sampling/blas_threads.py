"""One BLAS thread while a block runs, given back when the last such block ends, even
when several threads run blocks at once.

Two users:

- The random-walk encodings multiply small matrices with numpy; a multi-threaded BLAS
  sums them in another order, so a view would differ in the last bit between a loader
  worker (one thread) and the training process.
- The retrieval index's cell scan runs many small matmuls, on threads of its own: a
  multi-threaded BLAS would start its own threads for each of them, which compete with
  the search's (and with any other process) for the cores.

BLAS libraries (OpenBLAS, MKL) keep one thread count for the whole process, not one per
thread. Two threads that each set and restore it around their own block would overlap
(A in, B in, A out, B out) and leave the process at the count B found on entry, one
thread, for good. So the blocks share one limit: the first block to start sets one
thread, the last to end restores what the first found, and blocks in other threads run
meanwhile without waiting. (While a block runs, BLAS calls from other threads get one
thread too.) The libraries are found once, at the first block (`ThreadpoolController`),
which keeps a block's cost to a few microseconds.

Recent threadpoolctl releases let only one thread set OpenBLAS's process-wide count (the
first to set it, until that thread is cleared); other threads' settings are silently
dropped. The first and last blocks may run in different threads, so each setting here
takes that control under the lock and gives it back at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import threadpoolctl
from threadpoolctl import ThreadpoolController

_lock = threading.Lock()  # guards the count of running blocks and the limit
_running = 0
_limit: Any = None  # the shared limit while blocks run: restores the count it found
_controller: ThreadpoolController | None = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread for the block (see the module docstring)."""
    global _running, _limit, _controller
    with _lock:
        if _running == 0:
            if _controller is None:
                _controller = ThreadpoolController()
            with _openblas_control():
                _limit = _controller.limit(limits=1, user_api="blas")
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                with _openblas_control():
                    _limit.restore_original_limits()
                _limit = None


@contextmanager
def _openblas_control() -> Iterator[None]:
    """This thread may set OpenBLAS's count in the block (see the module docstring)."""
    openblas = getattr(threadpoolctl, "OpenBLASController", None)
    clear = getattr(openblas, "clear_controlling_thread", None)  # recent releases only
    if clear is not None:
        clear(force=True)
    try:
        yield
    finally:
        if clear is not None:
            clear(force=True)
