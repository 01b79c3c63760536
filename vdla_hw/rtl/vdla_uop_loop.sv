// The micro-op loop nest of GEMM and ALU (SPEC §3), shared by both:
//   for i < iter_out, j < iter_in, u in [uop_begin, uop_end)
// SETUP_CYCLES from the start (accept) cycle to the first issue, one micro-op issued every
// `cycles_per_uop` cycles, then DRAIN_CYCLES for the owner's pipeline, EXTRA_DRAIN_CYCLES more
// when `extra_drain` is set (an instruction with the requant bit: the requantizer's stages,
// which its last OUT write passes before it ends); an empty nest goes straight from setup to
// the drain. Index stream s (dst, src, wgt, ...) gets the offset
// i * factor_out[s] + j * factor_in[s] of the micro-op being issued. Every input is
// sampled in the start cycle. err_range: the head's micro-op range runs past the micro-op
// SRAM or is reversed (an error, as in the simulator).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_uop_loop #(
  parameter int STREAMS = 1,
  parameter int SETUP_CYCLES = 2,          // >= 2
  parameter int DRAIN_CYCLES = 1,          // >= 1
  parameter int MAX_CYCLES_PER_UOP = 1,
  parameter int EXTRA_DRAIN_CYCLES = 0
) (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     start,
  input  logic [31:0]              uop_begin,
  input  logic [31:0]              uop_end,
  input  logic [31:0]              iter_out,
  input  logic [31:0]              iter_in,
  input  logic [STREAMS-1:0][31:0] factor_out,
  input  logic [STREAMS-1:0][31:0] factor_in,
  input  logic [31:0]              cycles_per_uop,   // 1 .. MAX_CYCLES_PER_UOP
  input  logic                     extra_drain,      // drain EXTRA_DRAIN_CYCLES more
  output logic                     busy,
  output logic                     last,
  output logic                     issue,            // read micro-op uop_addr this cycle
  output logic [LOG_UOP_DEPTH-1:0] uop_addr,
  output logic [STREAMS-1:0][31:0] offset,
  output logic                     err_range
);
  localparam int LONG_DRAIN = DRAIN_CYCLES + EXTRA_DRAIN_CYCLES;
  localparam int LONGEST = SETUP_CYCLES > LONG_DRAIN ? SETUP_CYCLES : LONG_DRAIN;
  localparam int CW = $clog2(LONGEST + 1);
  typedef enum logic [1:0] {S_IDLE, S_SETUP, S_ISSUE, S_DRAIN} state_t;
  state_t state;
  logic [CW-1:0] cnt, drain_last;
  logic [31:0] first, stop, n_out, n_in, i, j, u;
  logic [STREAMS-1:0][31:0] f_out, f_in, off_i;
  logic empty, u_last, j_last, i_last, slot_first, slot_last;

  assign empty = n_out == 0 || n_in == 0 || stop <= first;
  assign u_last = u == stop - 1;
  assign j_last = j == n_in - 1;
  assign i_last = i == n_out - 1;
  assign busy = state != S_IDLE;
  assign last = state == S_DRAIN && cnt == 0;
  assign issue = state == S_ISSUE && slot_first;
  assign uop_addr = u[LOG_UOP_DEPTH-1:0];
  assign err_range = start && (uop_end > 32'(UOP_DEPTH) || uop_begin > uop_end);

  // the issue slots of one micro-op
  generate
    if (MAX_CYCLES_PER_UOP == 1) begin : g_every_cycle
      assign slot_first = 1'b1;
      assign slot_last = 1'b1;
      logic unused_rate;
      assign unused_rate = ^cycles_per_uop;
    end else begin : g_slots
      localparam int SW = $clog2(MAX_CYCLES_PER_UOP);
      logic [SW-1:0] slot, slot_end;
      always_ff @(posedge clk) begin
        if (start) slot_end <= SW'(cycles_per_uop - 1);
        if (state == S_SETUP) slot <= '0;
        else if (state == S_ISSUE) slot <= slot_last ? '0 : slot + 1'b1;
      end
      assign slot_first = slot == '0;
      assign slot_last = slot == slot_end;
    end
  endgenerate

  always_ff @(posedge clk) begin
    if (rst) state <= S_IDLE;
    else begin
      if (start) begin
        first <= uop_begin;
        stop <= uop_end;
        n_out <= iter_out;
        n_in <= iter_in;
        f_out <= factor_out;
        f_in <= factor_in;
        cnt <= CW'(SETUP_CYCLES - 2);
        drain_last <= extra_drain ? CW'(LONG_DRAIN - 1) : CW'(DRAIN_CYCLES - 1);
        state <= S_SETUP;
      end
      unique case (state)
        S_SETUP: begin
          cnt <= cnt - 1'b1;
          if (cnt == 0) begin
            i <= '0; j <= '0; u <= first;
            off_i <= '0; offset <= '0;
            if (empty) begin
              state <= S_DRAIN;
              cnt <= drain_last;
            end else state <= S_ISSUE;
          end
        end
        S_ISSUE: if (slot_last) begin
          u <= u + 1;
          if (u_last) begin
            u <= first;
            j <= j + 1;
            for (int s = 0; s < STREAMS; s++) offset[s] <= offset[s] + f_in[s];
            if (j_last) begin
              j <= '0;
              i <= i + 1;
              for (int s = 0; s < STREAMS; s++) begin
                off_i[s] <= off_i[s] + f_out[s];
                offset[s] <= off_i[s] + f_out[s];
              end
              if (i_last) begin
                state <= S_DRAIN;
                cnt <= drain_last;
              end
            end
          end
        end
        S_DRAIN: begin
          cnt <= cnt - 1'b1;
          if (cnt == 0) state <= S_IDLE;
        end
        default: ;
      endcase
    end
  end
endmodule
