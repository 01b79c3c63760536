// Beats of the next AXI burst: at most 256 (AXI4 INCR), never crossing a 4 KiB boundary
// (AXI4 forbids it), at most what is left. Addresses are bus-word aligned. Splitting a
// transfer into bursts issued back to back does not change its timing (the memory streams
// the bursts of one master one after another).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_burst_len (
  /* verilator lint_off UNUSEDSIGNAL */  // only the offset inside the 4 KiB page matters
  input  logic [31:0] addr,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic [31:0] beats_left,
  output logic [31:0] beats
);
  logic [31:0] to_page;
  assign to_page = (32'd4096 - 32'(addr[11:0])) >> LOG_BUS_BYTES;
  always_comb begin
    beats = beats_left;
    if (beats > 32'd256) beats = 32'd256;
    if (beats > to_page) beats = to_page;
  end
endmodule
