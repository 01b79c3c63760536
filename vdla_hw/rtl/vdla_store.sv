// The store module: executes STORE OUT (and dependence-only NOPs) in order, popping c2s
// before and pushing s2c after, reading the OUT SRAM.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_store (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     running,
  input  logic                     clear_stats,
  input  logic                     q_valid,
  input  logic [127:0]             q_insn,
  output logic                     q_pop,
  input  logic                     c2s_avail,
  output logic                     c2s_pop,
  output logic                     s2c_push,
  output logic                     out_re,
  output logic [LOG_ACC_DEPTH-1:0] out_raddr,
  input  logic [OUT_ELEM_BITS-1:0] out_rdata,
  output logic                     busy,
  output logic                     err_flag,
  output logic                     err_decode,
  output logic                     err_range,
  output logic                     err_dram,
  output logic [31:0]              busy_cycles,
  output logic [31:0]              token_stall_cycles,
  output logic [31:0]              fetch_stall_cycles,
  output logic [31:0]              store_bytes,
  // AXI4 write channels
  output logic                     aw_valid,
  input  logic                     aw_ready,
  output logic [31:0]              aw_addr,
  output logic [7:0]               aw_len,
  output logic                     w_valid,
  input  logic                     w_ready,
  output logic [BUS_BITS-1:0]      w_data,
  output logic                     w_last,
  input  logic                     b_valid,
  input  logic [1:0]               b_resp,
  output logic                     b_ready
);
  logic pop_prev, push_prev, is_nop, accept, dma_busy, dma_last, nop_busy, nop_last, push_latched;
  logic [31:0] nop_left;
  assign pop_prev = q_insn[MEM_POP_PREV_LSB];
  assign push_prev = q_insn[MEM_PUSH_PREV_LSB];
  assign is_nop = q_insn[MEM_X_SIZE_LSB +: 16] == 16'd0;

  logic engine_busy;
  assign engine_busy = dma_busy || nop_busy;
  assign accept = running && !engine_busy && q_valid && (!pop_prev || c2s_avail);
  assign q_pop = accept;
  assign c2s_pop = accept && pop_prev;
  assign busy = accept || engine_busy;
  // store has no pop_next / push_next queue (SPEC §4); it only reads OUT
  assign err_flag = accept && (q_insn[MEM_POP_NEXT_LSB] || q_insn[MEM_PUSH_NEXT_LSB]);
  assign err_decode = accept && !is_nop && q_insn[MEM_MEMORY_TYPE_LSB +: 3] != MEM_OUT;

  assign nop_last = (accept && is_nop && NOP_CYCLES == 1) || (nop_busy && nop_left == 0);
  always_ff @(posedge clk) begin
    if (rst) nop_busy <= 1'b0;
    else if (accept && is_nop && NOP_CYCLES > 1) begin
      nop_busy <= 1'b1;
      nop_left <= 32'(NOP_CYCLES - 2);
    end else if (nop_busy) begin
      nop_left <= nop_left - 1;
      if (nop_left == 0) nop_busy <= 1'b0;
    end
  end
  always_ff @(posedge clk) if (accept) push_latched <= push_prev;
  assign s2c_push = (accept && nop_last) ? push_prev : ((nop_last || dma_last) && push_latched);

  vdla_dma_wr u_dma (
    .clk, .rst, .start(accept && !is_nop), .insn(q_insn), .busy(dma_busy), .last(dma_last),
    .range_error(err_range), .dram_error(err_dram), .out_re, .out_raddr, .out_rdata,
    .aw_valid, .aw_ready, .aw_addr, .aw_len, .w_valid, .w_ready, .w_data, .w_last,
    .b_valid, .b_resp, .b_ready);

  always_ff @(posedge clk) begin
    if (clear_stats) store_bytes <= '0;
    else if (w_valid && w_ready) store_bytes <= store_bytes + 32'(BUS_BYTES);
  end

  vdla_perf u_perf (
    .clk, .clear(clear_stats), .running, .busy, .head_valid(q_valid),
    .busy_cycles, .token_stall_cycles, .fetch_stall_cycles);
endmodule
