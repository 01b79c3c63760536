// VDLA: fetch -> command queues -> load / compute / store, four dependence-token queues,
// the on-chip SRAMs (the ALU's lookup table lives in the ALU), an AXI-lite control block
// and one AXI4 master per module. The ports are flat and conventionally named (cocotb and
// Vivado's IP integrator find them by name); the package's VDLA_*_PORTS / _CONNECT macros
// declare each bundle and tie it to its struct.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_top (
  input  logic                      clk,
  input  logic                      rst,
  input  logic                      sim_clear,   // simulation only: zero every SRAM
  output logic                      irq,         // done
  `VDLA_AXIL_PORTS(s_axil)                       // AXI-lite control slave
  // AXI4 read masters (INCR bursts of full bus words: arsize = LOG_BUS_BYTES, arburst = INCR)
  `VDLA_AXI_RD_PORTS(m_fetch)
  `VDLA_AXI_RD_PORTS(m_load)
  `VDLA_AXI_RD_PORTS(m_comp)
  `VDLA_AXI_WR_PORTS(m_store)                    // AXI4 write master
  output logic [AXI_SIZE_BITS-1:0]  m_axi_size,  // common arsize/awsize
  output logic [AXI_BURST_BITS-1:0] m_axi_burst, // common arburst/awburst (INCR)
  // which request channels are valid this cycle: {store w, store aw, comp ar, load ar, fetch ar}
  output logic [4:0]                mem_req
);
  vdla_pkg::axil_req_t ctrl_req;
  vdla_pkg::axil_rsp_t ctrl_rsp;
  vdla_pkg::axi_rd_req_t fetch_req, load_req, comp_req;
  vdla_pkg::axi_rd_rsp_t fetch_rsp, load_rsp, comp_rsp;
  vdla_pkg::axi_wr_req_t store_req;
  vdla_pkg::axi_wr_rsp_t store_rsp;
  `VDLA_AXIL_CONNECT(s_axil, ctrl_req, ctrl_rsp)
  `VDLA_AXI_RD_CONNECT(m_fetch, fetch_req, fetch_rsp)
  `VDLA_AXI_RD_CONNECT(m_load, load_req, load_rsp)
  `VDLA_AXI_RD_CONNECT(m_comp, comp_req, comp_rsp)
  `VDLA_AXI_WR_CONNECT(m_store, store_req, store_rsp)
  assign m_axi_size = AXI_SIZE_BITS'(LOG_BUS_BYTES);
  assign m_axi_burst = AXI_BURST_INCR;
  assign mem_req = {store_req.wvalid, store_req.awvalid, comp_req.arvalid, load_req.arvalid, fetch_req.arvalid};

  // ---- control -----------------------------------------------------------------------------
  logic launch, running, done, finish_done;
  logic [REG_BITS-1:0] insn_addr, insn_count;
  logic [ERR_W-1:0] err_set;
  logic [NUM_COUNTERS-1:0][REG_BITS-1:0] counters;
  vdla_ctrl u_ctrl (
    .clk, .rst, .s_req(ctrl_req), .s_rsp(ctrl_rsp),
    .launch, .running, .done, .insn_addr, .insn_count, .finish_done, .err_set, .counters);
  assign irq = done;

  // ---- fetch and command queues --------------------------------------------------------------
  vdla_pkg::insn_t disp_insn, lq_insn, cq_insn, sq_insn;
  logic disp_load, disp_compute, disp_store, full_load, full_compute, full_store;
  logic lq_valid, cq_valid, sq_valid, lq_pop, cq_pop, sq_pop;
  logic [ERR_W-1:0] fetch_err;
  vdla_fetch u_fetch (
    .clk, .rst, .launch, .halt(done), .insn_addr, .insn_count, .err(fetch_err),
    .disp_insn, .disp_load, .disp_compute, .disp_store, .full_load, .full_compute, .full_store,
    .axi_req(fetch_req), .axi_rsp(fetch_rsp));
  vdla_cmd_fifo #(.WIDTH(INSN_WIDTH), .DEPTH(CMD_QUEUE_DEPTH)) u_lq (
    .clk, .rst, .flush(launch), .push(disp_load), .wdata(disp_insn), .full(full_load),
    .pop(lq_pop), .valid(lq_valid), .rdata(lq_insn));
  vdla_cmd_fifo #(.WIDTH(INSN_WIDTH), .DEPTH(CMD_QUEUE_DEPTH)) u_cq (
    .clk, .rst, .flush(launch), .push(disp_compute), .wdata(disp_insn), .full(full_compute),
    .pop(cq_pop), .valid(cq_valid), .rdata(cq_insn));
  vdla_cmd_fifo #(.WIDTH(INSN_WIDTH), .DEPTH(CMD_QUEUE_DEPTH)) u_sq (
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
  logic [UOPS_PER_BEAT*UOP_WIDTH-1:0] uop_wdata;
  logic [INP_ELEM_BITS-1:0] inp_wdata, inp_rdata;
  logic [WGT_ELEM_BITS-1:0] wgt_wdata, wgt_rdata;
  logic [ACC_ELEM_BITS-1:0] acc_wdata, acc_rdata;
  logic [OUT_ELEM_BITS-1:0] out_wdata, out_rdata;
  vdla_pkg::uop_t uop_rdata;

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

  // micro-op SRAM: UOPS_PER_BEAT banks of micro-ops (micro-op p in bank p mod UOPS_PER_BEAT)
  localparam int UOP_ROWS = UOP_DEPTH / UOPS_PER_BEAT;
  logic [UOPS_PER_BEAT*UOP_WIDTH-1:0] uop_bank_rdata;
  logic [LOG_UOPS_PER_BEAT:0] uop_lane_q;
  generate
    for (genvar b = 0; b < UOPS_PER_BEAT; b++) begin : g_uop_bank
      vdla_sram #(.WIDTH(UOP_WIDTH), .DEPTH(UOP_ROWS), .BANKS(1)) u_bank (
        .clk, .clear(sim_clear), .we(uop_wbe[b]), .wbe(1'b1),
        .waddr(uop_waddr[b*LOG_UOP_ROWS +: LOG_UOP_ROWS]), .wdata(uop_wdata[b*UOP_WIDTH +: UOP_WIDTH]),
        .re(uop_re), .raddr(uop_raddr[LOG_UOP_DEPTH-1 -: LOG_UOP_ROWS]),
        .rdata(uop_bank_rdata[b*UOP_WIDTH +: UOP_WIDTH]));
    end
  endgenerate
  always_ff @(posedge clk) if (uop_re) uop_lane_q <= (LOG_UOPS_PER_BEAT+1)'(uop_raddr & LOG_UOP_DEPTH'(UOPS_PER_BEAT - 1));
  assign uop_rdata = uop_bank_rdata[uop_lane_q * UOP_WIDTH +: UOP_WIDTH];
  logic unused_uop;
  assign unused_uop = uop_we;

  // ---- modules -----------------------------------------------------------------------------
  logic load_busy, store_busy, compute_busy;
  logic [ERR_W-1:0] load_err, compute_err, store_err, queue_err;
  logic [REG_BITS-1:0] l_busy, l_tok, l_fetch, c_busy, c_tok, c_fetch, s_busy, s_tok, s_fetch, gemm_uops, alu_uops;
  logic [REG_BITS-1:0] inp_bytes, wgt_bytes, uop_bytes, acc_bytes, acc8_bytes, lut_bytes, store_bytes;
  vdla_load u_load (
    .clk, .rst, .running, .clear_stats(launch), .q_valid(lq_valid), .q_insn(lq_insn), .q_pop(lq_pop),
    .c2l_avail, .c2l_pop, .l2c_push,
    .inp_we, .inp_wbe, .inp_waddr, .inp_wdata, .wgt_we, .wgt_wbe, .wgt_waddr, .wgt_wdata,
    .busy(load_busy), .err(load_err),
    .busy_cycles(l_busy), .token_stall_cycles(l_tok), .fetch_stall_cycles(l_fetch), .inp_bytes, .wgt_bytes,
    .axi_req(load_req), .axi_rsp(load_rsp));
  vdla_compute u_compute (
    .clk, .rst, .running, .clear_stats(launch), .sim_clear, .q_valid(cq_valid), .q_insn(cq_insn),
    .q_pop(cq_pop),
    .l2c_avail, .s2c_avail, .l2c_pop, .s2c_pop, .c2l_push, .c2s_push, .finish_done,
    .uop_we, .uop_wbe, .uop_waddr, .uop_wdata, .uop_re, .uop_raddr, .uop_rdata,
    .inp_re, .inp_raddr, .inp_rdata, .wgt_re, .wgt_raddr, .wgt_rdata,
    .acc_re, .acc_raddr, .acc_rdata, .acc_we, .acc_wbe, .acc_waddr, .acc_wdata,
    .out_we, .out_waddr, .out_wdata,
    .busy(compute_busy), .err(compute_err),
    .busy_cycles(c_busy), .token_stall_cycles(c_tok), .fetch_stall_cycles(c_fetch),
    .gemm_uops, .alu_uops, .uop_bytes, .acc_bytes, .acc8_bytes, .lut_bytes,
    .axi_req(comp_req), .axi_rsp(comp_rsp));
  vdla_store u_store (
    .clk, .rst, .running, .clear_stats(launch), .q_valid(sq_valid), .q_insn(sq_insn), .q_pop(sq_pop),
    .c2s_avail, .c2s_pop, .s2c_push, .out_re, .out_raddr, .out_rdata,
    .busy(store_busy), .err(store_err),
    .busy_cycles(s_busy), .token_stall_cycles(s_tok), .fetch_stall_cycles(s_fetch), .store_bytes,
    .axi_req(store_req), .axi_rsp(store_rsp));
  logic unused_compute_busy;
  assign unused_compute_busy = compute_busy;

  always_comb begin
    queue_err = '0;
    queue_err[ERR_TOKEN_OVERFLOW_BIT] = l2c_ovf || c2l_ovf || c2s_ovf || s2c_ovf;
    // at FINISH every token queue must be empty and load/store idle with nothing queued
    queue_err[ERR_FINISH_STATE_BIT] = finish_done && !(l2c_empty && c2l_empty && c2s_empty && s2c_empty
                                                      && !load_busy && !store_busy && !lq_valid && !sq_valid);
  end
  assign err_set = fetch_err | load_err | compute_err | store_err | queue_err;

  // the counters in register order
  assign counters[CNT_BUSY_LOAD] = l_busy;
  assign counters[CNT_BUSY_COMPUTE] = c_busy;
  assign counters[CNT_BUSY_STORE] = s_busy;
  assign counters[CNT_TOKEN_STALL_LOAD] = l_tok;
  assign counters[CNT_TOKEN_STALL_COMPUTE] = c_tok;
  assign counters[CNT_TOKEN_STALL_STORE] = s_tok;
  assign counters[CNT_FETCH_STALL_LOAD] = l_fetch;
  assign counters[CNT_FETCH_STALL_COMPUTE] = c_fetch;
  assign counters[CNT_FETCH_STALL_STORE] = s_fetch;
  assign counters[CNT_GEMM_UOPS] = gemm_uops;
  assign counters[CNT_ALU_UOPS] = alu_uops;
  assign counters[CNT_LOAD_BYTES_UOP] = uop_bytes;
  assign counters[CNT_LOAD_BYTES_WGT] = wgt_bytes;
  assign counters[CNT_LOAD_BYTES_INP] = inp_bytes;
  assign counters[CNT_LOAD_BYTES_ACC] = acc_bytes;
  assign counters[CNT_LOAD_BYTES_ACC_8BIT] = acc8_bytes;
  assign counters[CNT_STORE_BYTES] = store_bytes;
  assign counters[CNT_LOAD_BYTES_LUT] = lut_bytes;
endmodule
