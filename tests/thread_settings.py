"""What the tests of process-wide state compare before and after a call: the BLAS / OpenMP
thread pools, and torch's thread count in this thread and in a new one."""

from __future__ import annotations

import threading

import torch
from threadpoolctl import threadpool_info


def thread_settings() -> tuple[list[tuple[str, int]], int, int]:
    """BLAS / OpenMP thread counts, torch's in this thread and in a new one (torch keeps a
    process-wide count that new threads start with)."""
    fresh = []
    thread = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    pools = sorted((d["user_api"], d["num_threads"]) for d in threadpool_info())
    return pools, torch.get_num_threads(), fresh[0]
