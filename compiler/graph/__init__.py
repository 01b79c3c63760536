"""Graph IR, passes and the optimization pipeline."""
from .ir import Graph, GraphError, InvalidModelError, Node, TensorType, UnsupportedModelError, verify
from .pipeline import PIPELINE, optimize
from .reference import run_reference

__all__ = ["Graph", "GraphError", "InvalidModelError", "Node", "TensorType", "UnsupportedModelError", "verify",
           "PIPELINE", "optimize", "run_reference"]
