"""One module per accelerator op, each defining OP, its VdlaOp record (../op.py); the registry
(../registry.py) gathers them. An op is added here, with its semantics in
vdla.driver.host_ops.vdla."""
