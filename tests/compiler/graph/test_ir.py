"""The graph IR (vdla.compiler.graph.ir): verify names the node and tensor of each broken invariant,
copies are independent of the original, and the tensor and node queries agree with the graph."""
import numpy as np
import pytest

from vdla.compiler.graph import Graph, GraphError, Node, TensorType, verify

F = TensorType((2, 3), "float32")


def _graph():
    return Graph("g", ["x"], ["y"], [Node("Relu", "r", ["x"], ["h"]), Node("Add", "a", ["h", "c"], ["y"])],
                 {"x": F, "h": F, "y": F, "c": F}, {"c": np.ones((2, 3), np.float32)})


def test_a_well_formed_graph_verifies():
    verify(_graph())


@pytest.mark.parametrize("break_it, match", [
    (lambda g: g.types.pop("c"), r"graph 'g': tensor 'c' has no type"),
    (lambda g: g.nodes.reverse(), r"node 'a' \(Add\): input 'h' is used before it is defined"),
    (lambda g: g.nodes[1].outputs.__setitem__(0, "h"), r"node 'a' \(Add\): output 'h' is defined twice"),
    (lambda g: g.nodes[0].outputs.__setitem__(0, "x"), r"node 'r' \(Relu\): output 'x' is defined twice"),
    (lambda g: g.types.pop("h"), r"node 'r' \(Relu\): output 'h' has no type"),
    (lambda g: g.outputs.append("z"), r"graph 'g': output 'z' is never produced"),
])
def test_each_broken_invariant_is_named(break_it, match):
    g = _graph()
    break_it(g)
    with pytest.raises(GraphError, match=match):
        verify(g)


def test_a_copy_shares_nothing_a_pass_may_change():
    g = _graph()
    c = g.copy()
    c.nodes[0].inputs[0] = "other"
    c.nodes[0].attrs["alpha"] = 1
    c.types["new"] = F
    c.constants["new"] = np.zeros(1)
    c.meta["k"] = 1
    assert g.nodes[0].inputs == ["x"] and g.nodes[0].attrs == {}
    assert "new" not in g.types and "new" not in g.constants and g.meta == {}


def test_producers_consumers_and_activations():
    g = _graph()
    assert {k: n.name for k, n in g.producers().items()} == {"h": "r", "y": "a"}
    assert {k: [n.name for n in v] for k, v in g.consumers().items()} == {"x": ["r"], "h": ["a"], "c": ["a"]}
    assert g.activations() == ["x", "h", "y"] and g.is_constant("c") and not g.is_constant("h")
    assert "  a: Add(h, c) -> y:float32[2,3]" in g.summary()


def test_sizes_are_exact_for_every_dtype():
    assert TensorType((3, 5), "int8").nbytes == 15 and TensorType((3, 5), "int64").nbytes == 120
    assert TensorType((), "float32").size == 1 and str(TensorType((1, 2), "bool")) == "bool[1,2]"
    assert TensorType.of(np.zeros((4, 1), np.uint8)) == TensorType((4, 1), "uint8")


def test_added_tensors_and_constants_get_free_names_from_their_stem():
    g = _graph()
    assert g.add_tensor("z", F) == "z" and g.types["z"] == F
    assert g.add_tensor("h", F) == "h'" and g.add_tensor("h", F) == "h''"
    value = np.zeros((4,), np.int8)
    name = g.add_constant("c", value)
    assert name == "c'" and g.constants[name] is value and g.types[name] == TensorType((4,), "int8")
    verify(g)


def test_expand_nodes_replaces_each_node_in_place():
    g = Graph("g", ["x"], ["z"], [Node("Relu", "a", ["x"], ["y"]), Node("Neg", "b", ["y"], ["z"])],
              {n: TensorType((2,), "float32") for n in ("x", "y", "z", "y2")})
    out = g.expand_nodes(lambda n: [Node("Abs", "a1", ["x"], ["y2"]), Node("Relu", "a2", ["y2"], ["y"])]
                         if n.name == "a" else None)
    assert out is g and [n.name for n in g.nodes] == ["a1", "a2", "b"]
    verify(g)


def test_fold_chains_replaces_the_last_node_and_drops_the_absorbed():
    """A two-node chain folded at its end: the replacement takes the end's place, the inner node
    (earlier in the order) is dropped, an absorbed node is not offered to `match` again."""
    g = Graph("g", ["x"], ["z"], [Node("Relu", "a", ["x"], ["y"]), Node("Neg", "b", ["y"], ["z"]),
                                  Node("Abs", "c", ["x"], ["w"])],
              {n: TensorType((2,), "float32") for n in ("x", "y", "z", "w")})
    offered = []

    def match(node):
        offered.append(node.name)
        if node.name == "b":
            return Node("Elu", "b", ["x"], ["z"]), [g.nodes[0], g.nodes[2]]
        return None
    out = g.fold_chains(match)
    assert out is g and [(n.op, n.name) for n in g.nodes] == [("Elu", "b")] and offered == ["a", "b"]
