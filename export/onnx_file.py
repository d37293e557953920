"""One exported model file: torch module -> `MODEL.onnx` with its contract in the metadata.

`write_onnx` traces the module with `torch.onnx.export(dynamo=True)`, names the inputs
and outputs, marks the dimensions named in the specs as dynamic, records in the model's
`metadata_props`

```
hir_sdk.kind         encoder | quantizer | ranker
hir_sdk.version      SDK version that wrote it
hir_sdk.opset        default-domain opset
hir_sdk.inputs       JSON [{name, dtype, shape}], shape entries int or a dimension name
hir_sdk.outputs      same, for the outputs
hir_sdk.fingerprint  the data (or training-vector) fingerprint the weights come from
hir_sdk.<key>        anything else the caller adds (checkpoint step, sizes)
```
checks it with `onnx.checker` (full check, shape inference included) and writes it
atomically. `TensorSpec` is also what the serving side validates feeds against.
"""

from __future__ import annotations

import inspect
import json
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

from hir_sdk import __version__
from hir_sdk.io.atomic import atomic_write_bytes

PREFIX = "hir_sdk."
OPSET = 20
DTYPES = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its name, dtype and shape (an int, or a dimension's name)."""

    name: str
    dtype: str
    shape: tuple[int | str, ...]

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, value: dict[str, object]) -> TensorSpec:
        return cls(str(value["name"]), str(value["dtype"]), tuple(value["shape"]))  # type: ignore[arg-type]

    @classmethod
    def of(cls, name: str, array: np.ndarray, dims: dict[int, str]) -> TensorSpec:
        """The spec of an example `array`, with axis `i` named `dims[i]` (dynamic)."""
        dtype = {"b": "bool", "f": "float32"}.get(array.dtype.kind, "int64")
        shape = tuple(dims.get(i, int(size)) for i, size in enumerate(array.shape))
        return cls(name, dtype, shape)


def write_onnx(
    module: nn.Module,
    example: dict[str, np.ndarray],
    inputs: Sequence[TensorSpec],
    outputs: Sequence[str],
    path: str | Path,
    *,
    kind: str,
    fingerprint: str,
    extra: dict[str, object] | None = None,
) -> onnx.ModelProto:
    """Export `module(*example[name] for name in inputs)` to `path`; returns the model.

    The example's dynamic dimensions must be at least 2 (torch.export specializes 0
    and 1 to constants).
    """
    module = module.eval()
    dims = {n: torch.export.Dim(n) for s in inputs for n in s.shape if isinstance(n, str)}
    dynamic = tuple(
        {i: dims[d] for i, d in enumerate(s.shape) if isinstance(d, str)} for s in inputs
    )
    args = tuple(torch.from_numpy(np.ascontiguousarray(example[s.name])) for s in inputs)
    variadic = any(
        p.kind is inspect.Parameter.VAR_POSITIONAL
        for p in inspect.signature(module.forward).parameters.values()
    )
    with warnings.catch_warnings(), _quiet_exporter(), torch.no_grad():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module,
            args,
            input_names=[s.name for s in inputs],
            dynamic_shapes=(dynamic,) if variadic else dynamic,
            opset_version=OPSET,
            dynamo=True,
            verbose=False,
        )
    model = program.model_proto
    _name_outputs(model, outputs)
    output_specs = [_spec_of(value) for value in model.graph.output]
    meta = {
        "kind": kind,
        "version": __version__,
        "opset": OPSET,
        "inputs": [s.to_json() for s in inputs],
        "outputs": [s.to_json() for s in output_specs],
        "fingerprint": fingerprint,
        **(extra or {}),
    }
    del model.metadata_props[:]
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key = PREFIX + key
        entry.value = value if isinstance(value, str) else json.dumps(value)
    model.producer_name = "hir-sdk"
    model.producer_version = __version__
    onnx.checker.check_model(model, full_check=True)
    atomic_write_bytes(path, model.SerializeToString())
    return model


def read_metadata(model: onnx.ModelProto) -> dict[str, object]:
    """The `hir_sdk.*` metadata of a model, JSON values decoded."""
    meta: dict[str, object] = {}
    for entry in model.metadata_props:
        if entry.key.startswith(PREFIX):
            key = entry.key[len(PREFIX) :]
            try:
                meta[key] = json.loads(entry.value)
            except ValueError:
                meta[key] = entry.value
    return meta


def _name_outputs(model: onnx.ModelProto, names: Sequence[str]) -> None:
    """Rename the graph's outputs to `names`, first moving aside any internal value that
    already carries one of them (the exporter names values after ops, e.g. `embedding`)."""
    graph = model.graph
    if len(names) != len(graph.output):
        raise ValueError(f"{len(graph.output)} outputs, {len(names)} names given")
    current = [value.name for value in graph.output]
    taken = {out for node in graph.node for out in node.output} | {i.name for i in graph.input}
    for name in names:
        if name in taken and name not in current:
            _rename(graph, name, f"{name}__internal")
    for old, new in zip(current, names, strict=True):
        if old != new:
            _rename(graph, old, new)


def _rename(graph: onnx.GraphProto, old: str, new: str) -> None:
    for node in graph.node:
        node.input[:] = [new if name == old else name for name in node.input]
        node.output[:] = [new if name == old else name for name in node.output]
    for value in [*graph.output, *graph.value_info]:
        if value.name == old:
            value.name = new


def _spec_of(value: onnx.ValueInfoProto) -> TensorSpec:
    tensor = value.type.tensor_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    kind = {"b": "bool", "f": "float32"}.get(dtype.kind, "int64")
    shape = tuple(d.dim_param or int(d.dim_value) for d in tensor.shape.dim)
    return TensorSpec(value.name, kind, shape)


class _quiet_exporter:  # noqa: N801 - used as a context manager
    """Silence the exporter's progress lines and advice (they go to stdout and logging)."""

    loggers = ("torch.onnx", "onnxscript", "torch.export", "torch._dynamo", "torch.fx")

    def __enter__(self) -> None:
        self.levels = [(log, log.level) for log in map(logging.getLogger, self.loggers)]
        for log, _ in self.levels:
            log.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        for log, level in self.levels:
            log.setLevel(level)
