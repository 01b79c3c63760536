"""Model importers: ONNX -> graph IR."""
from .onnx_import import SUPPORTED_OPS, UnsupportedModelError, import_onnx, load_onnx

__all__ = ["SUPPORTED_OPS", "UnsupportedModelError", "import_onnx", "load_onnx"]
