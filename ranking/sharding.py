"""The ranker's embedding tables under TorchRec `DistributedModelParallel`.

```
torchrun --nproc_per_node=2 -m hir_sdk.ranking.sharding   # self-check: sharded == unsharded
torchrun --nproc_per_node=1 -m hir_sdk.ranking.sharding row_wise   # on a GPU machine
```
`shard_tables(model)` plans every TorchRec table of a module (the online ranker's id and
BoM bags, its event-id collection, or your own) with one sharding type, table-wise by
default, and wraps the module in `DistributedModelParallel`; the dense layers become
data-parallel. On CPU the process group is gloo and TorchRec's fused CPU kernels hold the
shards (row-wise sharding needs GPUs); on GPUs it is NCCL.

TorchRec builds the shards with fresh weights; `load_unsharded_state` copies a trained
unsharded state dict into them (each rank fills the slices it holds), so a model trained
on one process serves sharded bit for bit, which the self-check verifies.
"""

from __future__ import annotations

import gc
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed._shard.sharded_tensor import ShardedTensor
from torchrec import EmbeddingBagCollection, EmbeddingCollection
from torchrec.distributed.embedding import EmbeddingCollectionSharder
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from torchrec.distributed.model_parallel import DistributedModelParallel
from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
from torchrec.distributed.planner.types import ParameterConstraints


def table_names(model: nn.Module) -> list[str]:
    """Names of every TorchRec table in `model`."""
    names = []
    for module in model.modules():
        if isinstance(module, EmbeddingBagCollection):
            names += [t.name for t in module.embedding_bag_configs()]
        elif isinstance(module, EmbeddingCollection):
            names += [t.name for t in module.embedding_configs()]
    return names


def shard_tables(
    model: nn.Module, *, sharding_type: str = "table_wise", device: torch.device | None = None
) -> DistributedModelParallel:
    """Wrap `model` in DMP with its tables sharded `sharding_type` over the process group."""
    if not dist.is_initialized():
        raise RuntimeError("shard_tables needs a process group (run under torchrun)")
    device = device or torch.device("cpu")
    topology = Topology(world_size=dist.get_world_size(), compute_device=device.type)
    constraints = {
        name: ParameterConstraints(sharding_types=[sharding_type]) for name in table_names(model)
    }
    sharders = [EmbeddingBagCollectionSharder(), EmbeddingCollectionSharder()]
    planner = EmbeddingShardingPlanner(topology=topology, constraints=constraints)
    plan = planner.collective_plan(model, sharders, dist.GroupMember.WORLD)
    return DistributedModelParallel(model, device=device, plan=plan, sharders=sharders)


@torch.no_grad()
def load_unsharded_state(dmp: DistributedModelParallel, state: dict[str, torch.Tensor]) -> None:
    """Copy an unsharded module's `state_dict()` into the sharded one."""
    for key, value in dmp.state_dict().items():
        name = key.removeprefix("module.")
        if name not in state:
            raise KeyError(f"the unsharded state has no {name!r}")
        source = state[name]
        if isinstance(value, ShardedTensor):
            for shard in value.local_shards():
                offsets, sizes = shard.metadata.shard_offsets, shard.metadata.shard_sizes
                rows = tuple(slice(o, o + s) for o, s in zip(offsets, sizes, strict=True))
                shard.tensor.copy_(source[rows])
        else:
            value.copy_(source)


def _self_check(sharding_type: str) -> None:
    """Under torchrun: an online ranker, its tables sharded `sharding_type`, scores like the
    unsharded one. With GPUs each rank uses `cuda:LOCAL_RANK` and the group is NCCL."""
    import copy
    import dataclasses
    import json

    from hir_sdk.ranking.sequence.online_ranker import OnlineRanker, OnlineRankerConfig
    from hir_sdk.ranking.sequence.random_inputs import random_candidates, random_events

    cuda = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else None
    if device is not None:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = OnlineRanker(
        OnlineRankerConfig(dropout=0.0),
        num_actions=4,
        user_dim=16,
        hir_dim=8,
        dense_dim=5,
        bom_vocab=64,
        routes=4,
    )
    g = torch.Generator().manual_seed(rank)  # each rank its own requests
    B, R = 6, 5
    recent = random_events(B, R, hir_dim=8, num_actions=4, generator=g, fill=0.8, items=1000)
    cand = random_candidates(
        B, hir_dim=8, dense_dim=5, codebooks=4, codewords=16, routes=4, generator=g, owners=50
    )
    user = torch.randn(B, 16, generator=g)
    reference = copy.deepcopy(model)
    expected = reference(user, recent, cand).detach()
    dmp = shard_tables(model, sharding_type=sharding_type, device=device)
    load_unsharded_state(dmp, reference.state_dict())
    if device is not None:
        user, recent = user.to(device), tuple(t.to(device) for t in recent)
        cand = dataclasses.replace(
            cand, **{f.name: getattr(cand, f.name).to(device) for f in dataclasses.fields(cand)}
        )
    got = dmp(user, recent, cand).cpu()
    got.sum().backward()  # the sharded backward runs (fused table updates)
    report = {
        "rank": rank,
        "world_size": dist.get_world_size(),
        "backend": dist.get_backend(),
        "sharding_type": sharding_type,
        "tables": table_names(reference),
        "max_abs_diff": float((got.detach() - expected).abs().max()),
    }
    print(json.dumps(report), flush=True)
    out = os.environ.get("HIR_SHARDING_REPORT")
    if out:
        with open(f"{out}.{rank}.json", "w", encoding="utf-8") as f:
            json.dump(report, f)
    # Tear down in a fixed order: both ranks are done before either leaves, and the sharded
    # module (which holds the process group) is gone before the group is destroyed.
    dist.barrier()
    del dmp, got
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    _self_check(sys.argv[1] if len(sys.argv) > 1 else "table_wise")
    # A clean exit without C++ static destructors: a gloo / fbgemm worker thread still joinable
    # at interpreter teardown aborts the process ("terminate called without an active
    # exception") once in a while after the check has passed and written its report.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
