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
  input  vdla_pkg::insn_t          q_insn,
  output logic                     q_pop,
  input  logic                     c2s_avail,
  output logic                     c2s_pop,
  output logic                     s2c_push,
  output logic                     out_re,
  output logic [LOG_ACC_DEPTH-1:0] out_raddr,
  input  logic [OUT_ELEM_BITS-1:0] out_rdata,
  output logic                     busy,
  output logic [ERR_W-1:0]         err,            // ERROR_CAUSE bits raised this cycle
  output logic [REG_BITS-1:0]      busy_cycles,
  output logic [REG_BITS-1:0]      token_stall_cycles,
  output logic [REG_BITS-1:0]      fetch_stall_cycles,
  output logic [REG_BITS-1:0]      store_bytes,
  output vdla_pkg::axi_wr_req_t    axi_req,
  input  vdla_pkg::axi_wr_rsp_t    axi_rsp
);
  logic is_nop, accept, last, push_now, dma_busy, dma_last, range_err, dram_err;
  assign is_nop = q_insn.mem.x_size == '0;
  assign q_pop = accept;
  assign c2s_pop = accept && q_insn.hdr.pop_prev;
  assign s2c_push = last && push_now;
  vdla_issue #(.FLAGS(1)) u_issue (
    .clk, .rst, .running, .clear_stats, .q_valid,
    .pop({1'b0, q_insn.hdr.pop_prev}), .avail({1'b0, c2s_avail}),
    .hold(is_nop), .hold_cycles(32'(NOP_CYCLES)), .flags(q_insn.hdr.push_prev),
    .engine_busy(dma_busy), .engine_last(dma_last),
    .accept, .busy, .last, .last_flags(push_now),
    .busy_cycles, .token_stall_cycles, .fetch_stall_cycles);

  vdla_dma_wr u_dma (
    .clk, .rst, .start(accept && !is_nop), .insn(q_insn.mem), .busy(dma_busy), .last(dma_last),
    .range_error(range_err), .dram_error(dram_err), .out_re, .out_raddr, .out_rdata, .axi_req, .axi_rsp);

  always_comb begin
    err = '0;
    // store has no pop_next / push_next queue (SPEC §4); it only reads OUT
    err[ERR_FLAG_BIT] = accept && (q_insn.hdr.pop_next || q_insn.hdr.push_next);
    err[ERR_DECODE_BIT] = accept && !is_nop && q_insn.mem.memory_type != MEM_OUT;
    err[ERR_SRAM_RANGE_BIT] = range_err;
    err[ERR_DRAM_BIT] = dram_err;
  end

  always_ff @(posedge clk) begin
    if (clear_stats) store_bytes <= '0;
    else if (axi_req.wvalid && axi_rsp.wready) store_bytes <= store_bytes + REG_BITS'(BUS_BYTES);
  end
endmodule
