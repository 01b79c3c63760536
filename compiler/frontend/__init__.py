"""Model importers: ONNX -> graph IR."""
from ..graph.ir import GraphError, InvalidModelError
from .onnx_import import SUPPORTED_OPS, UnsupportedModelError, import_onnx, load_onnx

__all__ = ["SUPPORTED_OPS", "GraphError", "InvalidModelError", "UnsupportedModelError", "import_onnx", "load_onnx"]
