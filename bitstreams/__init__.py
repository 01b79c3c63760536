"""vdla.bitstreams: the board manifests and the bitstream build (package data of the wheel).

The manifests (*.json) are read by vdla.driver.board; `python -m vdla.bitstreams.build BOARD`
prepares the Vivado build and records a built bitstream in its manifest.
"""
