// The compute module: executes LOAD UOP/ACC/ACC_8BIT/LUT, GEMM, ALU and FINISH in order,
// popping l2c/s2c before and pushing c2l/c2s after. Owns the micro-op and accumulator SRAM
// writes and those of the ALU's lookup table (kept inside the ALU); GEMM and ALU write OUT
// as well: the low bits of each ACC write, or with the instruction's requant bit its
// requantized value REQUANT_PIPELINE_DEPTH cycles later (vdla_requant, one per lane, whose
// registers ALU SETQ loads).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_compute (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     running,
  input  logic                     clear_stats,
  input  logic                     sim_clear,     // simulation only: zero the lookup table and the requantizer
  input  logic                     q_valid,
  input  vdla_pkg::insn_t          q_insn,
  output logic                     q_pop,
  input  logic                     l2c_avail,
  input  logic                     s2c_avail,
  output logic                     l2c_pop,
  output logic                     s2c_pop,
  output logic                     c2l_push,
  output logic                     c2s_push,
  output logic                     finish_done,   // last cycle of FINISH
  // SRAM ports
  output logic                     uop_we,
  output logic [UOPS_PER_BEAT-1:0] uop_wbe,
  output logic [UOPS_PER_BEAT*LOG_UOP_ROWS-1:0] uop_waddr,     // per bank: row
  output logic [UOPS_PER_BEAT*UOP_WIDTH-1:0]    uop_wdata,     // per bank
  output logic                     uop_re,
  output logic [LOG_UOP_DEPTH-1:0] uop_raddr,
  input  vdla_pkg::uop_t           uop_rdata,
  output logic                     inp_re,
  output logic [LOG_INP_DEPTH-1:0] inp_raddr,
  input  logic [INP_ELEM_BITS-1:0] inp_rdata,
  output logic                     wgt_re,
  output logic [LOG_WGT_DEPTH-1:0] wgt_raddr,
  input  logic [WGT_ELEM_BITS-1:0] wgt_rdata,
  output logic                     acc_re,
  output logic [LOG_ACC_DEPTH-1:0] acc_raddr,
  input  logic [ACC_ELEM_BITS-1:0] acc_rdata,
  output logic                     acc_we,
  output logic [ACC_BEATS-1:0]     acc_wbe,
  output logic [LOG_ACC_DEPTH-1:0] acc_waddr,
  output logic [ACC_ELEM_BITS-1:0] acc_wdata,
  output logic                     out_we,
  output logic [LOG_ACC_DEPTH-1:0] out_waddr,
  output logic [OUT_ELEM_BITS-1:0] out_wdata,
  // status
  output logic                     busy,
  output logic [ERR_W-1:0]         err,           // ERROR_CAUSE bits raised this cycle
  output logic [REG_BITS-1:0]      busy_cycles,
  output logic [REG_BITS-1:0]      token_stall_cycles,
  output logic [REG_BITS-1:0]      fetch_stall_cycles,
  output logic [REG_BITS-1:0]      gemm_uops,
  output logic [REG_BITS-1:0]      alu_uops,
  output logic [REG_BITS-1:0]      uop_bytes,     // DRAM bytes loaded (padding excluded)
  output logic [REG_BITS-1:0]      acc_bytes,
  output logic [REG_BITS-1:0]      acc8_bytes,
  output logic [REG_BITS-1:0]      lut_bytes,
  output vdla_pkg::axi_rd_req_t    axi_req,
  input  vdla_pkg::axi_rd_rsp_t    axi_rsp
);
  // ---- decode the head of the queue -----------------------------------------------------
  vdla_pkg::opcode_e opcode;
  vdla_pkg::mem_type_e mtype;
  logic is_load, is_nop, is_dma, is_gemm, is_dw, is_alu, is_finish, is_hold, bad;
  assign opcode = q_insn.hdr.opcode;
  assign mtype = q_insn.mem.memory_type;
  assign is_load = opcode == OP_LOAD;
  assign is_nop = is_load && q_insn.mem.x_size == '0;
  assign is_dma = is_load && !is_nop && (mtype == MEM_UOP || mtype == MEM_ACC || mtype == MEM_ACC_8BIT
                                      || mtype == MEM_LUT);
  assign is_dw = DEPTHWISE_OK != 0 && opcode == OP_DEPTHWISE;    // GEMM's fields, the GEMM core
  assign is_gemm = opcode == OP_GEMM || is_dw;
  assign is_alu = opcode == OP_ALU;
  assign is_finish = opcode == OP_FINISH;
  assign bad = !(is_nop || is_dma || is_gemm || is_alu || is_finish);
  assign is_hold = is_nop || is_finish || bad;   // a bad instruction takes a NOP's time

  // ---- issue: pops before, pushes (and FINISH's done) in the last cycle ------------------
  localparam int F_PUSH_PREV = 0, F_PUSH_NEXT = 1, F_FINISH = 2;   // flags kept to the last cycle
  logic accept, last, dma_busy, dma_last, gemm_busy, gemm_last, alu_busy, alu_last;
  logic [2:0] last_flags;
  assign q_pop = accept;
  assign l2c_pop = accept && q_insn.hdr.pop_prev;
  assign s2c_pop = accept && q_insn.hdr.pop_next;
  vdla_issue #(.FLAGS(3)) u_issue (
    .clk, .rst, .running, .clear_stats, .q_valid,
    .pop({q_insn.hdr.pop_next, q_insn.hdr.pop_prev}), .avail({s2c_avail, l2c_avail}),
    .hold(is_hold), .hold_cycles(is_finish ? 32'(FINISH_CYCLES) : 32'(NOP_CYCLES)),
    .flags({is_finish, q_insn.hdr.push_next, q_insn.hdr.push_prev}),
    .engine_busy(dma_busy || gemm_busy || alu_busy), .engine_last(dma_last || gemm_last || alu_last),
    .accept, .busy, .last, .last_flags,
    .busy_cycles, .token_stall_cycles, .fetch_stall_cycles);
  assign c2l_push = last && last_flags[F_PUSH_PREV];
  assign c2s_push = last && last_flags[F_PUSH_NEXT];
  assign finish_done = last && last_flags[F_FINISH];

  // ---- DMA: micro-ops, accumulators and the lookup table -----------------------------------
  logic wr_en, wr_pad, dma_err;
  logic [31:0] wr_elem, wr_beat;
  logic [BUS_BITS-1:0] wr_data;
  /* verilator lint_off UNUSEDSIGNAL */  // the writes are routed by type, pad value and placement
  vdla_pkg::mem_insn_t dma_insn;
  /* verilator lint_on UNUSEDSIGNAL */
  vdla_dma_rd u_dma (
    .clk, .rst, .start(accept && is_dma), .insn(q_insn.mem), .insn_q(dma_insn), .busy(dma_busy),
    .last(dma_last), .wr_en, .wr_pad, .wr_elem, .wr_beat, .wr_data, .dram_error(dma_err), .axi_req, .axi_rsp);

  // micro-op beats: bank b of the micro-op SRAM takes a fixed lane of every beat
  logic uop_dma, acc_dma, lut_dma, acc8;
  logic [31:0] sram_base, dram_base, x_size;
  assign uop_dma = wr_en && dma_insn.memory_type == MEM_UOP;
  assign acc_dma = wr_en && (dma_insn.memory_type == MEM_ACC || dma_insn.memory_type == MEM_ACC_8BIT);
  assign lut_dma = wr_en && dma_insn.memory_type == MEM_LUT;
  assign acc8 = dma_insn.memory_type == MEM_ACC_8BIT;
  assign sram_base = 32'(dma_insn.sram_base);
  assign dram_base = 32'(dma_insn.dram_base);
  assign x_size = 32'(dma_insn.x_size);
  logic [UOPS_PER_BEAT-1:0] uop_bad;
  always_comb begin
    for (int b = 0; b < UOPS_PER_BEAT; b++) begin
      logic [31:0] lane, rel, p;
      lane = (32'(b) - sram_base + dram_base) & 32'(UOPS_PER_BEAT - 1);
      rel = (wr_beat << LOG_UOPS_PER_BEAT) + lane - (dram_base & 32'(UOPS_PER_BEAT - 1));
      p = sram_base + rel;
      // rel wraps below zero for lanes before dram_base in the first beat
      uop_wbe[b] = uop_dma && $signed(rel) >= 0 && rel < x_size && p < 32'(UOP_DEPTH);
      uop_bad[b] = uop_dma && $signed(rel) >= 0 && rel < x_size && p >= 32'(UOP_DEPTH);
      uop_waddr[b*LOG_UOP_ROWS +: LOG_UOP_ROWS] = LOG_UOP_ROWS'(p >> LOG_UOPS_PER_BEAT);
      uop_wdata[b*UOP_WIDTH +: UOP_WIDTH] = wr_data[lane * UOP_WIDTH +: UOP_WIDTH];
    end
  end
  assign uop_we = |uop_wbe;

  // accumulator beats: ACC is stored as ACC_BEATS banks of one bus word; an ACC_8BIT beat
  // sign-extends its ACC8_BITS lanes into ACC8_BANKS banks
  localparam int ACC8_BANKS = ACC_BEATS / ACC8_BEATS;
  localparam int ACC8_LANES = BUS_BITS / ACC8_BITS;   // per beat
  localparam logic [ACC_BITS-1:0] ACC_MIN = {1'b1, {(ACC_BITS-1){1'b0}}};
  localparam logic [ACC_BITS-1:0] ACC8_MIN = {{(ACC_BITS-ACC8_BITS+1){1'b1}}, {(ACC8_BITS-1){1'b0}}};
  logic [ACC8_LANES*ACC_BITS-1:0] widened;
  always_comb for (int l = 0; l < ACC8_LANES; l++)
    widened[l*ACC_BITS +: ACC_BITS] = ACC_BITS'($signed(wr_data[l*ACC8_BITS +: ACC8_BITS]));
  logic dma_acc_ok;
  assign dma_acc_ok = wr_elem < 32'(ACC_DEPTH);

  // lookup-table beats and padding elements go to every lane's copy of the table (vdla_lut)
  logic dma_lut_ok;
  assign dma_lut_ok = wr_elem < 32'(LUT_DEPTH);

  // ---- GEMM and ALU ----------------------------------------------------------------------
  logic g_uop_re, a_uop_re, g_acc_re, a_acc_re, g_acc_we, a_acc_we, g_err, a_err, g_cnt, a_cnt;
  logic g_rq, a_rq, rq_we;
  logic [REQUANT_INDEX_BITS-1:0] rq_idx;
  logic [ACC_ELEM_BITS-1:0] rq_wdata;
  logic [LOG_UOP_DEPTH-1:0] g_uop_raddr, a_uop_raddr;
  logic [LOG_ACC_DEPTH-1:0] g_acc_raddr, a_acc_raddr, g_acc_waddr, a_acc_waddr;
  logic [ACC_ELEM_BITS-1:0] g_acc_wdata, a_acc_wdata, a_res_wdata, wb_wdata;
  logic [OUT_ELEM_BITS-1:0] g_out_wdata, a_out_wdata;
  vdla_gemm u_gemm (
    .clk, .rst, .start(accept && is_gemm), .depthwise(is_dw), .insn(q_insn.gemm), .busy(gemm_busy),
    .last(gemm_last),
    .err_range(g_err), .requant(g_rq), .uop_count(g_cnt),
    .uop_re(g_uop_re), .uop_raddr(g_uop_raddr), .uop_rdata,
    .inp_re, .inp_raddr, .inp_rdata, .wgt_re, .wgt_raddr, .wgt_rdata,
    .acc_re(g_acc_re), .acc_raddr(g_acc_raddr), .acc_rdata,
    .acc_we(g_acc_we), .acc_waddr(g_acc_waddr), .acc_wdata(g_acc_wdata), .out_wdata(g_out_wdata));
  vdla_alu u_alu (
    .clk, .rst, .start(accept && is_alu), .insn(q_insn.alu), .busy(alu_busy), .last(alu_last),
    .err_range(a_err), .requant(a_rq), .uop_count(a_cnt),
    .uop_re(a_uop_re), .uop_raddr(a_uop_raddr), .uop_rdata,
    .acc_re(a_acc_re), .acc_raddr(a_acc_raddr), .acc_rdata,
    .acc_we(a_acc_we), .acc_waddr(a_acc_waddr), .acc_wdata(a_acc_wdata), .out_wdata(a_out_wdata),
    .res_wdata(a_res_wdata), .rq_we, .rq_idx, .rq_wdata,
    .lut_clear(sim_clear), .lut_we(lut_dma && dma_lut_ok), .lut_pad(wr_pad), .lut_pad_min(dma_insn.pad_min),
    .lut_elem(wr_elem[LUT_ADDR_BITS-1:0]), .lut_beat(wr_beat), .lut_wdata(wr_data),
    .wb_code(rq_code), .wb_entry(rq_entry));

  assign uop_re = g_uop_re || a_uop_re;
  assign uop_raddr = g_uop_re ? g_uop_raddr : a_uop_raddr;
  assign acc_re = g_acc_re || a_acc_re;
  assign acc_raddr = g_acc_re ? g_acc_raddr : a_acc_raddr;

  // ---- the requantizer: ACC writes of an instruction with the requant bit enter it, their
  // OUT writes leave it REQUANT_PIPELINE_DEPTH cycles later (the instruction's drain covers
  // them, so they never meet a direct OUT write)
  logic rq_in;
  logic [REQUANT_PIPELINE_DEPTH-1:0] rq_v;
  logic [REQUANT_PIPELINE_DEPTH-1:0][LOG_ACC_DEPTH-1:0] rq_addr;
  logic [OUT_ELEM_BITS-1:0] rq_code, rq_entry, rq_out;
  logic [BATCH*BLOCK-1:0] rq_table;      // per lane: CTRL's table bit
  assign rq_in = !acc_dma && (g_acc_we ? g_rq : a_acc_we && a_rq);
  assign wb_wdata = g_acc_we ? g_acc_wdata : a_res_wdata;     // ALU FLUSH writes 0 to ACC, its sum here
  always_ff @(posedge clk) begin
    rq_v[0] <= !rst && rq_in;
    rq_addr[0] <= acc_waddr;
    for (int k = 1; k < REQUANT_PIPELINE_DEPTH; k++) begin
      rq_v[k] <= !rst && rq_v[k-1];
      rq_addr[k] <= rq_addr[k-1];
    end
  end
  generate
    for (genvar l = 0; l < BATCH * BLOCK; l++) begin : g_requant
      vdla_requant u_requant (
        .clk, .rst, .clear(sim_clear), .we(rq_we), .idx(rq_idx), .wdata(rq_wdata[l*ACC_BITS +: ACC_BITS]),
        .x(wb_wdata[l*ACC_BITS +: ACC_BITS]), .y(rq_code[l*OUT_BITS +: OUT_BITS]), .table_bit(rq_table[l]));
      // with the table bit the lane writes the lookup table's entry for its code (second port)
      assign rq_out[l*OUT_BITS +: OUT_BITS] = rq_table[l] ? rq_entry[l*OUT_BITS +: OUT_BITS]
                                                          : rq_code[l*OUT_BITS +: OUT_BITS];
    end
  endgenerate

  always_comb begin
    acc_we = 1'b0;
    acc_wbe = '1;
    acc_waddr = wr_elem[LOG_ACC_DEPTH-1:0];
    acc_wdata = g_acc_wdata;
    out_we = 1'b0;
    out_waddr = g_acc_waddr;
    out_wdata = g_out_wdata;
    if (acc_dma) begin
      acc_we = dma_acc_ok;
      // padding: zeros, or with pad_min the lanes' most negative value (ACC_8BIT: sign-extended)
      if (wr_pad) acc_wdata = !dma_insn.pad_min ? '0
                            : acc8 ? {(ACC_ELEM_BITS / ACC_BITS){ACC8_MIN}}
                            : {(ACC_ELEM_BITS / ACC_BITS){ACC_MIN}};
      else if (acc8) begin
        acc_wdata = {ACC8_BEATS{widened}};
        acc_wbe = ACC_BEATS'({ACC8_BANKS{1'b1}}) << (wr_beat * 32'(ACC8_BANKS));
      end else begin
        acc_wdata = {ACC_BEATS{wr_data}};
        acc_wbe = ACC_BEATS'(1) << wr_beat;
      end
    end else if (g_acc_we) begin
      acc_we = 1'b1;
      acc_waddr = g_acc_waddr;
      out_we = !g_rq;
    end else if (a_acc_we) begin
      acc_we = 1'b1;
      acc_waddr = a_acc_waddr;
      acc_wdata = a_acc_wdata;
      out_we = !a_rq;
      out_waddr = a_acc_waddr;
      out_wdata = a_out_wdata;
    end
    if (rq_v[REQUANT_PIPELINE_DEPTH-1]) begin
      out_we = 1'b1;
      out_waddr = rq_addr[REQUANT_PIPELINE_DEPTH-1];
      out_wdata = rq_out;
    end
  end

  always_comb begin
    err = '0;
    err[ERR_DECODE_BIT] = accept && bad;
    err[ERR_SRAM_RANGE_BIT] = g_err || a_err || (acc_dma && !dma_acc_ok) || (lut_dma && !dma_lut_ok) || |uop_bad;
    err[ERR_DRAM_BIT] = dma_err;
  end

  logic [31:0] uop_lanes;   // micro-ops of this beat that belong to the load
  always_comb begin
    uop_lanes = '0;
    for (int b = 0; b < UOPS_PER_BEAT; b++) uop_lanes = uop_lanes + 32'(uop_wbe[b] || uop_bad[b]);
  end
  always_ff @(posedge clk) begin
    if (clear_stats) begin
      gemm_uops <= '0;
      alu_uops <= '0;
      uop_bytes <= '0;
      acc_bytes <= '0;
      acc8_bytes <= '0;
      lut_bytes <= '0;
    end else begin
      if (g_cnt) gemm_uops <= gemm_uops + 1;
      if (a_cnt) alu_uops <= alu_uops + 1;
      uop_bytes <= uop_bytes + REG_BITS'(uop_lanes << LOG_UOP_BYTES);
      if (acc_dma && !wr_pad) begin
        if (acc8) acc8_bytes <= acc8_bytes + REG_BITS'(BUS_BYTES);
        else acc_bytes <= acc_bytes + REG_BITS'(BUS_BYTES);
      end
      if (lut_dma && !wr_pad) lut_bytes <= lut_bytes + REG_BITS'(BUS_BYTES);
    end
  end
endmodule
