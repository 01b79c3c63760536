// The compute module: executes LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH in order, popping
// l2c/s2c before and pushing c2l/c2s after. Owns the micro-op and accumulator SRAM writes;
// GEMM and ALU write OUT as well.
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
  input  logic                     q_valid,
  input  logic [127:0]             q_insn,
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
  output logic [UOPS_PER_BEAT*LOG_UOP_ROWS-1:0] uop_waddr,   // per bank: row
  output logic [UOPS_PER_BEAT*32-1:0]            uop_wdata,  // per bank
  output logic                     uop_re,
  output logic [LOG_UOP_DEPTH-1:0] uop_raddr,
  input  logic [31:0]              uop_rdata,
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
  output logic                     err_decode,
  output logic                     err_range,
  output logic                     err_dram,
  output logic [31:0]              busy_cycles,
  output logic [31:0]              token_stall_cycles,
  output logic [31:0]              fetch_stall_cycles,
  output logic [31:0]              gemm_uops,
  output logic [31:0]              alu_uops,
  output logic [31:0]              uop_bytes,     // DRAM bytes loaded (padding excluded)
  output logic [31:0]              acc_bytes,
  output logic [31:0]              acc8_bytes,
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
  // ---- decode the head of the queue -----------------------------------------------------
  logic [2:0] opcode, mtype;
  logic pop_prev, pop_next, push_prev, push_next;
  logic is_load, is_nop, is_dma, is_gemm, is_alu, is_finish, is_hold, bad;
  assign opcode = q_insn[2:0];
  assign mtype = q_insn[MEM_MEMORY_TYPE_LSB +: 3];
  assign pop_prev = q_insn[3];
  assign pop_next = q_insn[4];
  assign push_prev = q_insn[5];
  assign push_next = q_insn[6];
  assign is_load = opcode == OP_LOAD;
  assign is_nop = is_load && q_insn[MEM_X_SIZE_LSB +: 16] == 16'd0;
  assign is_dma = is_load && !is_nop && (mtype == MEM_UOP || mtype == MEM_ACC || mtype == MEM_ACC_8BIT);
  assign is_gemm = opcode == OP_GEMM;
  assign is_alu = opcode == OP_ALU;
  assign is_finish = opcode == OP_FINISH;
  assign bad = !(is_nop || is_dma || is_gemm || is_alu || is_finish);
  assign is_hold = is_nop || is_finish || bad;   // a bad instruction takes a NOP's time

  logic engine_busy, accept, dma_busy, dma_last, gemm_busy, gemm_last, alu_busy, alu_last;
  logic hold_busy, hold_last, hold_finish;
  logic [31:0] hold_left, hold_len;
  assign engine_busy = dma_busy || gemm_busy || alu_busy || hold_busy;
  assign accept = running && !engine_busy && q_valid && (!pop_prev || l2c_avail) && (!pop_next || s2c_avail);
  assign q_pop = accept;
  assign l2c_pop = accept && pop_prev;
  assign s2c_pop = accept && pop_next;
  assign busy = accept || engine_busy;
  assign err_decode = accept && bad;

  // ---- NOP / FINISH: a fixed number of cycles, the accept cycle included ---------------
  assign hold_len = is_finish ? 32'(FINISH_CYCLES) : 32'(NOP_CYCLES);
  assign hold_last = (accept && is_hold && hold_len == 1) || (hold_busy && hold_left == 0);
  always_ff @(posedge clk) begin
    if (rst) hold_busy <= 1'b0;
    else if (accept && is_hold && hold_len > 1) begin
      hold_busy <= 1'b1;
      hold_left <= hold_len - 2;
    end else if (hold_busy) begin
      hold_left <= hold_left - 1;
      if (hold_left == 0) hold_busy <= 1'b0;
    end
  end

  logic push_prev_q, push_next_q, finish_q, now;
  always_ff @(posedge clk) if (accept) begin
    push_prev_q <= push_prev;
    push_next_q <= push_next;
    finish_q <= is_finish;
  end
  logic last;
  assign last = hold_last || dma_last || gemm_last || alu_last;
  assign now = accept && hold_last;    // a one-cycle instruction: flags come from the head
  assign c2l_push = last && (now ? push_prev : push_prev_q);
  assign c2s_push = last && (now ? push_next : push_next_q);
  assign hold_finish = now ? is_finish : finish_q;
  assign finish_done = hold_last && hold_finish;

  // ---- DMA: micro-ops and accumulators ---------------------------------------------------
  logic [2:0] dma_type;
  logic [15:0] dma_sram_base, dma_x_size;
  logic [31:0] dma_dram_base;
  logic dma_pad_min;   // padding holds the lanes' most negative value instead of zeros
  always_ff @(posedge clk) if (accept) begin
    dma_type <= mtype;
    dma_pad_min <= q_insn[MEM_PAD_MIN_LSB];
    dma_sram_base <= q_insn[MEM_SRAM_BASE_LSB +: 16];
    dma_x_size <= q_insn[MEM_X_SIZE_LSB +: 16];
    dma_dram_base <= q_insn[MEM_DRAM_BASE_LSB +: 32];
  end

  logic wr_en, wr_pad;
  logic [31:0] wr_elem, wr_beat;
  logic [BUS_BITS-1:0] wr_data;
  vdla_dma_rd u_dma (
    .clk, .rst, .start(accept && is_dma), .insn(q_insn), .busy(dma_busy), .last(dma_last),
    .wr_en, .wr_pad, .wr_elem, .wr_beat, .wr_data, .dram_error(err_dram),
    .ar_valid, .ar_ready, .ar_addr, .ar_len, .r_valid, .r_data, .r_resp, .r_ready);

  // micro-op beats: bank b of the micro-op SRAM takes a fixed lane of every beat
  logic uop_dma, acc_dma, acc8;
  assign uop_dma = wr_en && dma_type == MEM_UOP;
  assign acc_dma = wr_en && dma_type != MEM_UOP;
  assign acc8 = dma_type == MEM_ACC_8BIT;
  logic [UOPS_PER_BEAT-1:0] uop_bad;
  always_comb begin
    for (int b = 0; b < UOPS_PER_BEAT; b++) begin
      logic [31:0] lane, rel, p;
      lane = (32'(b) - 32'(dma_sram_base) + dma_dram_base) & 32'(UOPS_PER_BEAT - 1);
      rel = (wr_beat << LOG_UOPS_PER_BEAT) + lane - (dma_dram_base & 32'(UOPS_PER_BEAT - 1));
      p = 32'(dma_sram_base) + rel;
      // rel wraps below zero for lanes before dram_base in the first beat
      uop_wbe[b] = uop_dma && $signed(rel) >= 0 && rel < 32'(dma_x_size) && p < 32'(UOP_DEPTH);
      uop_bad[b] = uop_dma && $signed(rel) >= 0 && rel < 32'(dma_x_size) && p >= 32'(UOP_DEPTH);
      uop_waddr[b*LOG_UOP_ROWS +: LOG_UOP_ROWS] = LOG_UOP_ROWS'(p >> LOG_UOPS_PER_BEAT);
      uop_wdata[b*32 +: 32] = wr_data[lane * 32 +: 32];
    end
  end
  assign uop_we = |uop_wbe;

  // accumulator beats: ACC is stored as ACC_BEATS banks of one bus word; an ACC_8BIT beat
  // sign-extends BUS_BYTES int8 lanes into 4 banks
  localparam int ACC8_BANKS = ACC_BEATS / ACC8_BEATS;
  logic [4*BUS_BITS-1:0] widened;
  always_comb for (int l = 0; l < BUS_BYTES; l++)
    widened[l*32 +: 32] = 32'($signed(wr_data[l*8 +: 8]));
  logic dma_acc_ok;
  assign dma_acc_ok = wr_elem < 32'(ACC_DEPTH);

  // ---- GEMM and ALU ----------------------------------------------------------------------
  logic g_uop_re, a_uop_re, g_acc_re, a_acc_re, g_acc_we, a_acc_we, g_err, a_err, g_cnt, a_cnt;
  logic [LOG_UOP_DEPTH-1:0] g_uop_raddr, a_uop_raddr;
  logic [LOG_ACC_DEPTH-1:0] g_acc_raddr, a_acc_raddr, g_acc_waddr, a_acc_waddr;
  logic [ACC_ELEM_BITS-1:0] g_acc_wdata, a_acc_wdata;
  logic [OUT_ELEM_BITS-1:0] g_out_wdata, a_out_wdata;
  vdla_gemm u_gemm (
    .clk, .rst, .start(accept && is_gemm), .insn(q_insn), .busy(gemm_busy), .last(gemm_last),
    .err_range(g_err), .uop_count(g_cnt), .uop_re(g_uop_re), .uop_raddr(g_uop_raddr), .uop_rdata,
    .inp_re, .inp_raddr, .inp_rdata, .wgt_re, .wgt_raddr, .wgt_rdata,
    .acc_re(g_acc_re), .acc_raddr(g_acc_raddr), .acc_rdata,
    .acc_we(g_acc_we), .acc_waddr(g_acc_waddr), .acc_wdata(g_acc_wdata), .out_wdata(g_out_wdata));
  vdla_alu u_alu (
    .clk, .rst, .start(accept && is_alu), .insn(q_insn), .busy(alu_busy), .last(alu_last),
    .err_range(a_err), .uop_count(a_cnt), .uop_re(a_uop_re), .uop_raddr(a_uop_raddr), .uop_rdata,
    .acc_re(a_acc_re), .acc_raddr(a_acc_raddr), .acc_rdata,
    .acc_we(a_acc_we), .acc_waddr(a_acc_waddr), .acc_wdata(a_acc_wdata), .out_wdata(a_out_wdata));

  assign uop_re = g_uop_re || a_uop_re;
  assign uop_raddr = g_uop_re ? g_uop_raddr : a_uop_raddr;
  assign acc_re = g_acc_re || a_acc_re;
  assign acc_raddr = g_acc_re ? g_acc_raddr : a_acc_raddr;

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
      if (wr_pad) acc_wdata = !dma_pad_min ? '0
                            : acc8 ? {(ACC_ELEM_BITS / 32){32'hFFFF_FF80}}      // int8 -128, sign-extended
                            : {(ACC_ELEM_BITS / 32){32'h8000_0000}};           // int32 -2^31
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
      out_we = 1'b1;
    end else if (a_acc_we) begin
      acc_we = 1'b1;
      acc_waddr = a_acc_waddr;
      acc_wdata = a_acc_wdata;
      out_we = 1'b1;
      out_waddr = a_acc_waddr;
      out_wdata = a_out_wdata;
    end
  end

  assign err_range = g_err || a_err || (acc_dma && !dma_acc_ok) || |uop_bad;

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
    end else begin
      if (g_cnt) gemm_uops <= gemm_uops + 1;
      if (a_cnt) alu_uops <= alu_uops + 1;
      uop_bytes <= uop_bytes + (uop_lanes << 2);
      if (acc_dma && !wr_pad) begin
        if (acc8) acc8_bytes <= acc8_bytes + 32'(BUS_BYTES);
        else acc_bytes <= acc_bytes + 32'(BUS_BYTES);
      end
    end
  end

  vdla_perf u_perf (
    .clk, .clear(clear_stats), .running, .busy, .head_valid(q_valid),
    .busy_cycles, .token_stall_cycles, .fetch_stall_cycles);
endmodule
