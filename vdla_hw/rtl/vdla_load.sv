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
  input  vdla_pkg::insn_t          q_insn,
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
  output logic [ERR_W-1:0]         err,            // ERROR_CAUSE bits raised this cycle
  output logic [REG_BITS-1:0]      busy_cycles,
  output logic [REG_BITS-1:0]      token_stall_cycles,
  output logic [REG_BITS-1:0]      fetch_stall_cycles,
  output logic [REG_BITS-1:0]      inp_bytes,      // DRAM bytes loaded (padding excluded)
  output logic [REG_BITS-1:0]      wgt_bytes,
  output vdla_pkg::axi_rd_req_t    axi_req,
  input  vdla_pkg::axi_rd_rsp_t    axi_rsp
);
  localparam logic [INP_BITS-1:0] INP_MIN = {1'b1, {(INP_BITS-1){1'b0}}};
  localparam logic [WGT_BITS-1:0] WGT_MIN = {1'b1, {(WGT_BITS-1){1'b0}}};
  logic is_nop, accept, last, push_now, dma_busy, dma_last;
  assign is_nop = q_insn.mem.x_size == '0;
  assign q_pop = accept;
  assign c2l_pop = accept && q_insn.hdr.pop_next;
  assign l2c_push = last && push_now;
  vdla_issue #(.FLAGS(1)) u_issue (
    .clk, .rst, .running, .clear_stats, .q_valid,
    .pop({q_insn.hdr.pop_next, 1'b0}), .avail({c2l_avail, 1'b0}),
    .hold(is_nop), .hold_cycles(32'(NOP_CYCLES)), .flags(q_insn.hdr.push_next),
    .engine_busy(dma_busy), .engine_last(dma_last),
    .accept, .busy, .last, .last_flags(push_now),
    .busy_cycles, .token_stall_cycles, .fetch_stall_cycles);

  // ---- DMA into INP / WGT ----------------------------------------------------------------
  logic wr_en, wr_pad, dma_err, is_wgt;
  logic [31:0] wr_elem, wr_beat;
  logic [BUS_BITS-1:0] wr_data;
  /* verilator lint_off UNUSEDSIGNAL */  // the load routes writes by memory type and pad value only
  vdla_pkg::mem_insn_t dma_insn;
  /* verilator lint_on UNUSEDSIGNAL */
  vdla_dma_rd u_dma (
    .clk, .rst, .start(accept && !is_nop), .insn(q_insn.mem), .insn_q(dma_insn), .busy(dma_busy),
    .last(dma_last), .wr_en, .wr_pad, .wr_elem, .wr_beat, .wr_data, .dram_error(dma_err), .axi_req, .axi_rsp);

  logic in_range;
  assign is_wgt = dma_insn.memory_type == MEM_WGT;
  assign in_range = is_wgt ? wr_elem < 32'(WGT_DEPTH) : wr_elem < 32'(INP_DEPTH);
  assign inp_we = wr_en && in_range && !is_wgt;
  assign wgt_we = wr_en && in_range && is_wgt;
  assign inp_waddr = wr_elem[LOG_INP_DEPTH-1:0];
  assign wgt_waddr = wr_elem[LOG_WGT_DEPTH-1:0];
  // padding: zeros, or with pad_min the lanes' most negative value
  assign inp_wdata = wr_pad ? (dma_insn.pad_min ? {(INP_ELEM_BITS / INP_BITS){INP_MIN}} : '0) : {INP_BEATS{wr_data}};
  assign wgt_wdata = wr_pad ? (dma_insn.pad_min ? {(WGT_ELEM_BITS / WGT_BITS){WGT_MIN}} : '0) : {WGT_BEATS{wr_data}};
  assign inp_wbe = wr_pad ? '1 : INP_BEATS'(1) << wr_beat;
  assign wgt_wbe = wr_pad ? '1 : WGT_BEATS'(1) << wr_beat;

  always_comb begin
    err = '0;
    // load has no pop_prev / push_prev queue (SPEC §4)
    err[ERR_FLAG_BIT] = accept && (q_insn.hdr.pop_prev || q_insn.hdr.push_prev);
    err[ERR_SRAM_RANGE_BIT] = wr_en && !in_range;
    err[ERR_DRAM_BIT] = dma_err;
  end

  always_ff @(posedge clk) begin
    if (clear_stats) begin
      inp_bytes <= '0;
      wgt_bytes <= '0;
    end else if (wr_en && !wr_pad) begin
      if (is_wgt) wgt_bytes <= wgt_bytes + REG_BITS'(BUS_BYTES);
      else inp_bytes <= inp_bytes + REG_BITS'(BUS_BYTES);
    end
  end
endmodule
