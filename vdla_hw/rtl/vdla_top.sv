// VDLA: fetch -> command queues -> load / compute / store, four dependence-token queues,
// the on-chip SRAMs, an AXI-lite control block and one AXI4 master per module.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_top (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     sim_clear,   // simulation only: zero every SRAM
  output logic                     irq,         // done
  // AXI-lite control slave
  input  logic                     s_axil_awvalid,
  output logic                     s_axil_awready,
  input  logic [REG_ADDR_BITS-1:0] s_axil_awaddr,
  input  logic                     s_axil_wvalid,
  output logic                     s_axil_wready,
  input  logic [31:0]              s_axil_wdata,
  input  logic [3:0]               s_axil_wstrb,
  output logic                     s_axil_bvalid,
  input  logic                     s_axil_bready,
  output logic [1:0]               s_axil_bresp,
  input  logic                     s_axil_arvalid,
  output logic                     s_axil_arready,
  input  logic [REG_ADDR_BITS-1:0] s_axil_araddr,
  output logic                     s_axil_rvalid,
  input  logic                     s_axil_rready,
  output logic [31:0]              s_axil_rdata,
  output logic [1:0]               s_axil_rresp,
  // AXI4 read masters (INCR bursts of full bus words: arsize = LOG_BUS_BYTES, arburst = 1)
  output logic                     m_fetch_arvalid,
  input  logic                     m_fetch_arready,
  output logic [31:0]              m_fetch_araddr,
  output logic [7:0]               m_fetch_arlen,
  input  logic                     m_fetch_rvalid,
  input  logic [BUS_BITS-1:0]      m_fetch_rdata,
  input  logic [1:0]               m_fetch_rresp,
  input  logic                     m_fetch_rlast,
  output logic                     m_fetch_rready,
  output logic                     m_load_arvalid,
  input  logic                     m_load_arready,
  output logic [31:0]              m_load_araddr,
  output logic [7:0]               m_load_arlen,
  input  logic                     m_load_rvalid,
  input  logic [BUS_BITS-1:0]      m_load_rdata,
  input  logic [1:0]               m_load_rresp,
  input  logic                     m_load_rlast,
  output logic                     m_load_rready,
  output logic                     m_comp_arvalid,
  input  logic                     m_comp_arready,
  output logic [31:0]              m_comp_araddr,
  output logic [7:0]               m_comp_arlen,
  input  logic                     m_comp_rvalid,
  input  logic [BUS_BITS-1:0]      m_comp_rdata,
  input  logic [1:0]               m_comp_rresp,
  input  logic                     m_comp_rlast,
  output logic                     m_comp_rready,
  // AXI4 write master (store)
  output logic                     m_store_awvalid,
  input  logic                     m_store_awready,
  output logic [31:0]              m_store_awaddr,
  output logic [7:0]               m_store_awlen,
  output logic                     m_store_wvalid,
  input  logic                     m_store_wready,
  output logic [BUS_BITS-1:0]      m_store_wdata,
  output logic [BUS_BYTES-1:0]     m_store_wstrb,
  output logic                     m_store_wlast,
  input  logic                     m_store_bvalid,
  input  logic [1:0]               m_store_bresp,
  output logic                     m_store_bready,
  output logic [2:0]               m_axi_size,   // common arsize/awsize
  output logic [1:0]               m_axi_burst,  // common arburst/awburst (INCR)
  // which request channels are valid this cycle: {store w, store aw, comp ar, load ar, fetch ar}
  output logic [4:0]               mem_req
);
  assign m_axi_size = 3'(LOG_BUS_BYTES);
  assign m_axi_burst = 2'b01;
  assign m_store_wstrb = '1;
  assign mem_req = {m_store_wvalid, m_store_awvalid, m_comp_arvalid, m_load_arvalid, m_fetch_arvalid};
  logic unused_rlast;
  assign unused_rlast = m_fetch_rlast ^ m_load_rlast ^ m_comp_rlast;

  // ---- control -----------------------------------------------------------------------------
  logic launch, running, done, finish_done;
  logic [31:0] insn_addr, insn_count;
  logic [5:0] err_set;
  logic [NUM_COUNTERS*32-1:0] counters;
  vdla_ctrl u_ctrl (
    .clk, .rst,
    .s_awvalid(s_axil_awvalid), .s_awready(s_axil_awready), .s_awaddr(s_axil_awaddr),
    .s_wvalid(s_axil_wvalid), .s_wready(s_axil_wready), .s_wdata(s_axil_wdata), .s_wstrb(s_axil_wstrb),
    .s_bvalid(s_axil_bvalid), .s_bready(s_axil_bready), .s_bresp(s_axil_bresp),
    .s_arvalid(s_axil_arvalid), .s_arready(s_axil_arready), .s_araddr(s_axil_araddr),
    .s_rvalid(s_axil_rvalid), .s_rready(s_axil_rready), .s_rdata(s_axil_rdata), .s_rresp(s_axil_rresp),
    .launch, .running, .done, .insn_addr, .insn_count, .finish_done, .err_set, .counters);
  assign irq = done;

  // ---- fetch and command queues --------------------------------------------------------------
  logic [127:0] disp_insn, lq_insn, cq_insn, sq_insn;
  logic disp_load, disp_compute, disp_store, full_load, full_compute, full_store;
  logic lq_valid, cq_valid, sq_valid, lq_pop, cq_pop, sq_pop, fetch_err;
  vdla_fetch u_fetch (
    .clk, .rst, .launch, .halt(done), .insn_addr, .insn_count, .dram_error(fetch_err),
    .disp_insn, .disp_load, .disp_compute, .disp_store, .full_load, .full_compute, .full_store,
    .ar_valid(m_fetch_arvalid), .ar_ready(m_fetch_arready), .ar_addr(m_fetch_araddr),
    .ar_len(m_fetch_arlen), .r_valid(m_fetch_rvalid), .r_data(m_fetch_rdata),
    .r_resp(m_fetch_rresp), .r_ready(m_fetch_rready));
  vdla_cmd_fifo #(.WIDTH(128), .DEPTH(CMD_QUEUE_DEPTH)) u_lq (
    .clk, .rst, .flush(launch), .push(disp_load), .wdata(disp_insn), .full(full_load),
    .pop(lq_pop), .valid(lq_valid), .rdata(lq_insn));
  vdla_cmd_fifo #(.WIDTH(128), .DEPTH(CMD_QUEUE_DEPTH)) u_cq (
    .clk, .rst, .flush(launch), .push(disp_compute), .wdata(disp_insn), .full(full_compute),
    .pop(cq_pop), .valid(cq_valid), .rdata(cq_insn));
  vdla_cmd_fifo #(.WIDTH(128), .DEPTH(CMD_QUEUE_DEPTH)) u_sq (
    .clk, .rst, .flush(launch), .push(disp_store), .wdata(disp_insn), .full(full_store),
    .pop(sq_pop), .valid(sq_valid), .rdata(sq_insn));

  // ---- dependence tokens ---------------------------------------------------------------------
  logic l2c_push, l2c_pop, l2c_avail, l2c_empty, l2c_ovf;
  logic c2l_push, c2l_pop, c2l_avail, c2l_empty, c2l_ovf;
  logic c2s_push, c2s_pop, c2s_avail, c2s_empty, c2s_ovf;
  logic s2c_push, s2c_pop, s2c_avail, s2c_empty, s2c_ovf;
  vdla_token_queue #(.DEPTH(TOKEN_QUEUE_DEPTH), .DELAY(TOKEN_DELAY)) u_l2c (
    .clk, .rst, .flush(launch), .push(l2c_push), .pop(l2c_pop), .avail(l2c_avail), .empty(l2c_empty), .overflow(l2c_ovf));
  vdla_token_queue #(.DEPTH(TOKEN_QUEUE_DEPTH), .DELAY(TOKEN_DELAY)) u_c2l (
    .clk, .rst, .flush(launch), .push(c2l_push), .pop(c2l_pop), .avail(c2l_avail), .empty(c2l_empty), .overflow(c2l_ovf));
  vdla_token_queue #(.DEPTH(TOKEN_QUEUE_DEPTH), .DELAY(TOKEN_DELAY)) u_c2s (
    .clk, .rst, .flush(launch), .push(c2s_push), .pop(c2s_pop), .avail(c2s_avail), .empty(c2s_empty), .overflow(c2s_ovf));
  vdla_token_queue #(.DEPTH(TOKEN_QUEUE_DEPTH), .DELAY(TOKEN_DELAY)) u_s2c (
    .clk, .rst, .flush(launch), .push(s2c_push), .pop(s2c_pop), .avail(s2c_avail), .empty(s2c_empty), .overflow(s2c_ovf));

  // ---- SRAMs -------------------------------------------------------------------------------
  logic inp_we, inp_re, wgt_we, wgt_re, acc_we, acc_re, out_we, out_re, uop_we, uop_re;
  logic [INP_BEATS-1:0] inp_wbe;
  logic [WGT_BEATS-1:0] wgt_wbe;
  logic [ACC_BEATS-1:0] acc_wbe;
  logic [UOPS_PER_BEAT-1:0] uop_wbe;
  logic [LOG_INP_DEPTH-1:0] inp_waddr, inp_raddr;
  logic [LOG_WGT_DEPTH-1:0] wgt_waddr, wgt_raddr;
  logic [LOG_ACC_DEPTH-1:0] acc_waddr, acc_raddr, out_waddr, out_raddr;
  logic [LOG_UOP_DEPTH-1:0] uop_raddr;
  logic [UOPS_PER_BEAT*LOG_UOP_ROWS-1:0] uop_waddr;
  logic [UOPS_PER_BEAT*32-1:0] uop_wdata;
  logic [INP_ELEM_BITS-1:0] inp_wdata, inp_rdata;
  logic [WGT_ELEM_BITS-1:0] wgt_wdata, wgt_rdata;
  logic [ACC_ELEM_BITS-1:0] acc_wdata, acc_rdata;
  logic [OUT_ELEM_BITS-1:0] out_wdata, out_rdata;
  logic [31:0] uop_rdata;

  vdla_sram #(.WIDTH(INP_ELEM_BITS), .DEPTH(INP_DEPTH), .BANKS(INP_BEATS)) u_inp (
    .clk, .clear(sim_clear), .we(inp_we), .wbe(inp_wbe), .waddr(inp_waddr), .wdata(inp_wdata),
    .re(inp_re), .raddr(inp_raddr), .rdata(inp_rdata));
  vdla_sram #(.WIDTH(WGT_ELEM_BITS), .DEPTH(WGT_DEPTH), .BANKS(WGT_BEATS)) u_wgt (
    .clk, .clear(sim_clear), .we(wgt_we), .wbe(wgt_wbe), .waddr(wgt_waddr), .wdata(wgt_wdata),
    .re(wgt_re), .raddr(wgt_raddr), .rdata(wgt_rdata));
  vdla_sram #(.WIDTH(ACC_ELEM_BITS), .DEPTH(ACC_DEPTH), .BANKS(ACC_BEATS)) u_acc (
    .clk, .clear(sim_clear), .we(acc_we), .wbe(acc_wbe), .waddr(acc_waddr), .wdata(acc_wdata),
    .re(acc_re), .raddr(acc_raddr), .rdata(acc_rdata));
  vdla_sram #(.WIDTH(OUT_ELEM_BITS), .DEPTH(OUT_DEPTH), .BANKS(1)) u_out (
    .clk, .clear(sim_clear), .we(out_we), .wbe(1'b1), .waddr(out_waddr), .wdata(out_wdata),
    .re(out_re), .raddr(out_raddr), .rdata(out_rdata));

  // micro-op SRAM: UOPS_PER_BEAT banks of 32-bit words (micro-op p in bank p mod UOPS_PER_BEAT)
  localparam int UOP_ROWS = UOP_DEPTH / UOPS_PER_BEAT;
  logic [UOPS_PER_BEAT*32-1:0] uop_bank_rdata;
  logic [LOG_UOPS_PER_BEAT:0] uop_lane_q;
  generate
    for (genvar b = 0; b < UOPS_PER_BEAT; b++) begin : g_uop_bank
      vdla_sram #(.WIDTH(32), .DEPTH(UOP_ROWS), .BANKS(1)) u_bank (
        .clk, .clear(sim_clear), .we(uop_wbe[b]), .wbe(1'b1),
        .waddr(uop_waddr[b*LOG_UOP_ROWS +: LOG_UOP_ROWS]), .wdata(uop_wdata[b*32 +: 32]),
        .re(uop_re), .raddr(uop_raddr[LOG_UOP_DEPTH-1 -: LOG_UOP_ROWS]),
        .rdata(uop_bank_rdata[b*32 +: 32]));
    end
  endgenerate
  always_ff @(posedge clk) if (uop_re) uop_lane_q <= (LOG_UOPS_PER_BEAT+1)'(uop_raddr & LOG_UOP_DEPTH'(UOPS_PER_BEAT - 1));
  assign uop_rdata = uop_bank_rdata[uop_lane_q * 32 +: 32];
  logic unused_uop;
  assign unused_uop = uop_we;

  // ---- modules -----------------------------------------------------------------------------
  logic load_busy, store_busy, compute_busy;
  logic [10:0] errs;
  logic [31:0] l_busy, l_tok, l_fetch, c_busy, c_tok, c_fetch, s_busy, s_tok, s_fetch, gemm_uops, alu_uops;
  logic [31:0] inp_bytes, wgt_bytes, uop_bytes, acc_bytes, acc8_bytes, store_bytes;
  vdla_load u_load (
    .clk, .rst, .running, .clear_stats(launch), .q_valid(lq_valid), .q_insn(lq_insn), .q_pop(lq_pop),
    .c2l_avail, .c2l_pop, .l2c_push,
    .inp_we, .inp_wbe, .inp_waddr, .inp_wdata, .wgt_we, .wgt_wbe, .wgt_waddr, .wgt_wdata,
    .busy(load_busy), .err_flag(errs[0]), .err_range(errs[1]), .err_dram(errs[2]),
    .busy_cycles(l_busy), .token_stall_cycles(l_tok), .fetch_stall_cycles(l_fetch), .inp_bytes, .wgt_bytes,
    .ar_valid(m_load_arvalid), .ar_ready(m_load_arready), .ar_addr(m_load_araddr), .ar_len(m_load_arlen),
    .r_valid(m_load_rvalid), .r_data(m_load_rdata), .r_resp(m_load_rresp), .r_ready(m_load_rready));
  vdla_compute u_compute (
    .clk, .rst, .running, .clear_stats(launch), .q_valid(cq_valid), .q_insn(cq_insn), .q_pop(cq_pop),
    .l2c_avail, .s2c_avail, .l2c_pop, .s2c_pop, .c2l_push, .c2s_push, .finish_done,
    .uop_we, .uop_wbe, .uop_waddr, .uop_wdata, .uop_re, .uop_raddr, .uop_rdata,
    .inp_re, .inp_raddr, .inp_rdata, .wgt_re, .wgt_raddr, .wgt_rdata,
    .acc_re, .acc_raddr, .acc_rdata, .acc_we, .acc_wbe, .acc_waddr, .acc_wdata,
    .out_we, .out_waddr, .out_wdata,
    .busy(compute_busy), .err_decode(errs[3]), .err_range(errs[4]), .err_dram(errs[5]),
    .busy_cycles(c_busy), .token_stall_cycles(c_tok), .fetch_stall_cycles(c_fetch),
    .gemm_uops, .alu_uops, .uop_bytes, .acc_bytes, .acc8_bytes,
    .ar_valid(m_comp_arvalid), .ar_ready(m_comp_arready), .ar_addr(m_comp_araddr), .ar_len(m_comp_arlen),
    .r_valid(m_comp_rvalid), .r_data(m_comp_rdata), .r_resp(m_comp_rresp), .r_ready(m_comp_rready));
  vdla_store u_store (
    .clk, .rst, .running, .clear_stats(launch), .q_valid(sq_valid), .q_insn(sq_insn), .q_pop(sq_pop),
    .c2s_avail, .c2s_pop, .s2c_push, .out_re, .out_raddr, .out_rdata,
    .busy(store_busy), .err_flag(errs[6]), .err_decode(errs[7]), .err_range(errs[8]), .err_dram(errs[9]),
    .busy_cycles(s_busy), .token_stall_cycles(s_tok), .fetch_stall_cycles(s_fetch), .store_bytes,
    .aw_valid(m_store_awvalid), .aw_ready(m_store_awready), .aw_addr(m_store_awaddr), .aw_len(m_store_awlen),
    .w_valid(m_store_wvalid), .w_ready(m_store_wready), .w_data(m_store_wdata), .w_last(m_store_wlast),
    .b_valid(m_store_bvalid), .b_resp(m_store_bresp), .b_ready(m_store_bready));
  logic unused_compute_busy;
  assign unused_compute_busy = compute_busy;

  // at FINISH every token queue must be empty and load/store idle with nothing queued
  assign errs[10] = finish_done && !(l2c_empty && c2l_empty && c2s_empty && s2c_empty
                                     && !load_busy && !store_busy && !lq_valid && !sq_valid);
  always_comb begin
    err_set = '0;
    err_set[ERR_FLAG_BIT] = errs[0] || errs[6];
    err_set[ERR_SRAM_RANGE_BIT] = errs[1] || errs[4] || errs[8];
    err_set[ERR_DRAM_BIT] = errs[2] || errs[5] || errs[9] || fetch_err;
    err_set[ERR_DECODE_BIT] = errs[3] || errs[7];
    err_set[ERR_TOKEN_OVERFLOW_BIT] = l2c_ovf || c2l_ovf || c2s_ovf || s2c_ovf;
    err_set[ERR_FINISH_STATE_BIT] = errs[10];
  end
  // regmap.COUNTERS order, counter 0 in the low bits
  assign counters = {store_bytes, acc8_bytes, acc_bytes, inp_bytes, wgt_bytes, uop_bytes, alu_uops, gemm_uops,
                     s_fetch, c_fetch, l_fetch, s_tok, c_tok, l_tok, s_busy, c_busy, l_busy};
endmodule
