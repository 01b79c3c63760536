// Performance counters of one module, defined as the simulator's statistics are:
//   busy        cycles inside an instruction (accept cycle included),
//   token_stall cycles an instruction sat at the head of the queue waiting for tokens,
//   fetch_stall cycles the module idled with an empty queue before its next instruction
//               (idle cycles after the module's last instruction are not counted).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_perf (
  input  logic                clk,
  input  logic                clear,
  input  logic                running,
  input  logic                busy,        // executing this cycle
  input  logic                head_valid,  // an instruction waits at the head of the queue
  output logic [REG_BITS-1:0] busy_cycles,
  output logic [REG_BITS-1:0] token_stall_cycles,
  output logic [REG_BITS-1:0] fetch_stall_cycles
);
  logic [REG_BITS-1:0] idle_pending;
  always_ff @(posedge clk) begin
    if (clear) begin
      busy_cycles <= '0;
      token_stall_cycles <= '0;
      fetch_stall_cycles <= '0;
      idle_pending <= '0;
    end else if (running) begin
      if (busy) busy_cycles <= busy_cycles + 1;
      else if (head_valid) token_stall_cycles <= token_stall_cycles + 1;
      else idle_pending <= idle_pending + 1;
      if (head_valid && idle_pending != 0) begin
        fetch_stall_cycles <= fetch_stall_cycles + idle_pending;
        idle_pending <= '0;
      end
    end
  end
endmodule
