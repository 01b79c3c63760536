// In-order issue of one module's command queue (SPEC §4), shared by load, compute and store.
// The head is accepted when the module is idle and every token it pops is there (the pops
// happen in the accept cycle). A fixed-length instruction (a dependence-only NOP, FINISH)
// is timed here, the accept cycle included; any other runs on the owner's engine. The flags
// the instruction's last cycle needs (its pushes) are kept from its accept to that cycle.
// The module's busy / token-stall / fetch-stall counters are defined by the same events.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_issue #(
  parameter int FLAGS = 1
) (
  input  logic             clk,
  input  logic             rst,
  input  logic             running,
  input  logic             clear_stats,
  input  logic             q_valid,       // an instruction waits at the head of the queue
  input  logic [1:0]       pop,           // the head's pops (0 where the module has no queue)
  input  logic [1:0]       avail,         // a token waits in the queue of pop[k]
  input  logic             hold,          // the head is a fixed-length instruction ...
  input  logic [31:0]      hold_cycles,   // ... of this many cycles (>= 1)
  input  logic [FLAGS-1:0] flags,         // the head's flags wanted in its last cycle
  input  logic             engine_busy,   // the owner's engine runs an instruction accepted earlier
  input  logic             engine_last,   // ... and this is its last cycle
  output logic             accept,
  output logic             busy,
  output logic             last,          // the last cycle of the instruction in flight
  output logic [FLAGS-1:0] last_flags,    // its flags (the head's for a one-cycle instruction)
  output logic [REG_BITS-1:0] busy_cycles,
  output logic [REG_BITS-1:0] token_stall_cycles,
  output logic [REG_BITS-1:0] fetch_stall_cycles
);
  logic hold_busy, hold_last, now;
  logic [31:0] hold_left;
  logic [FLAGS-1:0] flags_q;

  assign accept = running && !engine_busy && !hold_busy && q_valid && &(~pop | avail);
  assign busy = accept || engine_busy || hold_busy;

  assign hold_last = (accept && hold && hold_cycles == 1) || (hold_busy && hold_left == 0);
  always_ff @(posedge clk) begin
    if (rst) hold_busy <= 1'b0;
    else if (accept && hold && hold_cycles > 1) begin
      hold_busy <= 1'b1;
      hold_left <= hold_cycles - 2;
    end else if (hold_busy) begin
      hold_left <= hold_left - 1;
      if (hold_left == 0) hold_busy <= 1'b0;
    end
  end

  always_ff @(posedge clk) if (accept) flags_q <= flags;
  assign last = hold_last || engine_last;
  assign now = accept && hold_last;
  assign last_flags = now ? flags : flags_q;

  vdla_perf u_perf (
    .clk, .clear(clear_stats), .running, .busy, .head_valid(q_valid),
    .busy_cycles, .token_stall_cycles, .fetch_stall_cycles);
endmodule
