"""ONNX export and serving (installed as `hir_sdk.export`); may import core and ranking.

```python
from hir_sdk.export import export_run, load_serving
result = export_run("runs/hir", "data/world", "export", ranker="ab/multistage_ranker", check=True)
serving = load_serving("export")   # onnxruntime sessions: encoder, quantizer, ranker
```
"""

from hir_sdk.export.export_run import ExportResult, export_run
from hir_sdk.export.exporter import export_encoder, export_quantizer, export_ranker
from hir_sdk.export.onnx_file import TensorSpec, read_metadata
from hir_sdk.export.parity import MAX_TOKEN_MISMATCH, TOLERANCE, Parity
from hir_sdk.export.serving import (
    EncoderSession,
    OnnxModel,
    QuantizerSession,
    RankerSession,
    Serving,
    load_serving,
)

__all__ = [
    "MAX_TOKEN_MISMATCH",
    "TOLERANCE",
    "EncoderSession",
    "ExportResult",
    "OnnxModel",
    "Parity",
    "QuantizerSession",
    "RankerSession",
    "Serving",
    "TensorSpec",
    "export_encoder",
    "export_quantizer",
    "export_ranker",
    "export_run",
    "load_serving",
    "read_metadata",
]
