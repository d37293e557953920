"""ONNX export and parity checks (installed as `hir_sdk.export`); may import core and ranking."""
