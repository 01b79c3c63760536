// Beats of the next AXI burst: at most AXI_MAX_BEATS (AXI4 INCR), never crossing an
// AXI_BOUNDARY_BYTES (4 KiB) boundary (AXI4 forbids it), at most what is left. Addresses
// are bus-word aligned. Splitting a transfer into bursts issued back to back does not
// change its timing (the memory streams the bursts of one master one after another).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_burst_len (
  /* verilator lint_off UNUSEDSIGNAL */  // only the offset inside the boundary page matters
  input  logic [AXI_ADDR_BITS-1:0] addr,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic [31:0]              beats_left,
  output logic [31:0]              beats
);
  logic [31:0] to_page;
  assign to_page = (32'(AXI_BOUNDARY_BYTES) - 32'(addr[LOG_AXI_BOUNDARY_BYTES-1:0])) >> LOG_BUS_BYTES;
  always_comb begin
    beats = beats_left;
    if (beats > 32'(AXI_MAX_BEATS)) beats = 32'(AXI_MAX_BEATS);
    if (beats > to_page) beats = to_page;
  end
endmodule
