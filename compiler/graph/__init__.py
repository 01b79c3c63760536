"""Graph IR, passes and the optimization pipeline."""
from .ir import Graph, GraphError, Node, TensorType, verify
from .pipeline import PIPELINE, optimize
from .reference import run_reference

__all__ = ["Graph", "GraphError", "Node", "TensorType", "verify", "PIPELINE", "optimize",
           "run_reference"]
