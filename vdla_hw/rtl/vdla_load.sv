// The load module: executes LOAD INP/WGT (and dependence-only NOPs) in order, popping
// c2l before and pushing l2c after, and writes the input and weight SRAMs.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_load (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     running,
  input  logic                     clear_stats,
  // command queue head
  input  logic                     q_valid,
  input  logic [127:0]             q_insn,
  output logic                     q_pop,
  // tokens
  input  logic                     c2l_avail,
  output logic                     c2l_pop,
  output logic                     l2c_push,
  // SRAM write ports
  output logic                     inp_we,
  output logic [INP_BEATS-1:0]     inp_wbe,
  output logic [LOG_INP_DEPTH-1:0] inp_waddr,
  output logic [INP_ELEM_BITS-1:0] inp_wdata,
  output logic                     wgt_we,
  output logic [WGT_BEATS-1:0]     wgt_wbe,
  output logic [LOG_WGT_DEPTH-1:0] wgt_waddr,
  output logic [WGT_ELEM_BITS-1:0] wgt_wdata,
  // status
  output logic                     busy,
  output logic                     err_flag,
  output logic                     err_range,
  output logic                     err_dram,
  output logic [31:0]              busy_cycles,
  output logic [31:0]              token_stall_cycles,
  output logic [31:0]              fetch_stall_cycles,
  output logic [31:0]              inp_bytes,      // DRAM bytes loaded (padding excluded)
  output logic [31:0]              wgt_bytes,
  // AXI4 read channels
  output logic                     ar_valid,
  input  logic                     ar_ready,
  output logic [31:0]              ar_addr,
  output logic [7:0]               ar_len,
  input  logic                     r_valid,
  input  logic [BUS_BITS-1:0]      r_data,
  input  logic [1:0]               r_resp,
  output logic                     r_ready
);
  logic pop_next, push_next, is_nop, accept, dma_busy, dma_last, nop_busy, nop_last;
  logic push_latched, is_wgt;
  logic [31:0] nop_left;
  assign pop_next = q_insn[MEM_POP_NEXT_LSB];
  assign push_next = q_insn[MEM_PUSH_NEXT_LSB];
  assign is_nop = q_insn[MEM_X_SIZE_LSB +: 16] == 16'd0;

  logic engine_busy;
  assign engine_busy = dma_busy || nop_busy;
  assign accept = running && !engine_busy && q_valid && (!pop_next || c2l_avail);
  assign q_pop = accept;
  assign c2l_pop = accept && pop_next;
  assign busy = accept || engine_busy;
  // load has no pop_prev / push_prev queue (SPEC §4)
  assign err_flag = accept && (q_insn[MEM_POP_PREV_LSB] || q_insn[MEM_PUSH_PREV_LSB]);

  // ---- NOP: nop_cycles, the accept cycle included --------------------------------------
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

  logic pad_min;   // padding holds int8 -128 in every lane instead of zeros
  always_ff @(posedge clk) if (accept) begin
    push_latched <= push_next;
    pad_min <= q_insn[MEM_PAD_MIN_LSB];
    is_wgt <= q_insn[MEM_MEMORY_TYPE_LSB +: 3] == MEM_WGT;
  end
  assign l2c_push = (accept && nop_last) ? push_next : ((nop_last || dma_last) && push_latched);

  // ---- DMA into INP / WGT ----------------------------------------------------------------
  logic wr_en, wr_pad;
  logic [31:0] wr_elem, wr_beat;
  logic [BUS_BITS-1:0] wr_data;
  vdla_dma_rd u_dma (
    .clk, .rst, .start(accept && !is_nop), .insn(q_insn), .busy(dma_busy), .last(dma_last),
    .wr_en, .wr_pad, .wr_elem, .wr_beat, .wr_data, .dram_error(err_dram),
    .ar_valid, .ar_ready, .ar_addr, .ar_len, .r_valid, .r_data, .r_resp, .r_ready);

  logic in_range;
  assign in_range = is_wgt ? wr_elem < 32'(WGT_DEPTH) : wr_elem < 32'(INP_DEPTH);
  assign err_range = wr_en && !in_range;
  assign inp_we = wr_en && in_range && !is_wgt;
  assign wgt_we = wr_en && in_range && is_wgt;
  assign inp_waddr = wr_elem[LOG_INP_DEPTH-1:0];
  assign wgt_waddr = wr_elem[LOG_WGT_DEPTH-1:0];
  assign inp_wdata = wr_pad ? (pad_min ? {(INP_BEATS * BUS_BYTES){8'h80}} : '0) : {INP_BEATS{wr_data}};
  assign wgt_wdata = wr_pad ? (pad_min ? {(WGT_BEATS * BUS_BYTES){8'h80}} : '0) : {WGT_BEATS{wr_data}};
  assign inp_wbe = wr_pad ? '1 : INP_BEATS'(1) << wr_beat;
  assign wgt_wbe = wr_pad ? '1 : WGT_BEATS'(1) << wr_beat;

  always_ff @(posedge clk) begin
    if (clear_stats) begin
      inp_bytes <= '0;
      wgt_bytes <= '0;
    end else if (wr_en && !wr_pad) begin
      if (is_wgt) wgt_bytes <= wgt_bytes + 32'(BUS_BYTES);
      else inp_bytes <= inp_bytes + 32'(BUS_BYTES);
    end
  end

  vdla_perf u_perf (
    .clk, .clear(clear_stats), .running, .busy, .head_valid(q_valid),
    .busy_cycles, .token_stall_cycles, .fetch_stall_cycles);
endmodule
