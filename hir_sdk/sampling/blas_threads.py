"""One BLAS thread while views are encoded, given back when the encoding is done, even
when several threads encode at once.

The random-walk encodings multiply small matrices with numpy; a multi-threaded BLAS sums
them in another order, so a view would differ in the last bit between a loader worker
(one thread) and the training process. They are therefore computed with one BLAS thread.

BLAS libraries (OpenBLAS, MKL) keep one thread count for the whole process, not one per
thread, and threadpoolctl lets one thread at a time set it. Two threads whose limits
overlap (A in, B in, A out, B out) would leave the process at the count B found on
entry, one thread, for good. So the blocks run one at a time, each setting and restoring
the count in its own thread: once no view is being encoded, the process has its own
setting back. (While a block runs, BLAS calls from other threads get one thread too.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

_serial = threading.RLock()  # one block at a time (re-entrant: blocks may nest)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread for the block (see the module docstring)."""
    with _serial, threadpool_limits(1, user_api="blas"):
        yield
