// The GEMM core: one micro-op per cycle over the loop nest
//   for i < iter_out, j < iter_in, u in [uop_begin, uop_end)
// then a GEMM_PIPELINE_DEPTH-cycle drain. Pipeline of micro-op k issued in cycle c:
//   c   read uop SRAM
//   c+1 form indices a/x/w (loop offsets added), read INP[x] and WGT[w]
//   c+2 BATCH x BLOCK_OUT x BLOCK_IN products
//   c+3 reduce over BLOCK_IN; read ACC[a]
//   c+4 ACC[a] += sum, OUT[a] = low 8 bits; write at the end of c+4
// so micro-op k+2 (reads ACC in c+5) sees k's write: acc_raw_min_distance = 2, no forwarding.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_gemm (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     start,
  input  logic [127:0]             insn,
  output logic                     busy,
  output logic                     last,
  output logic                     err_range,
  output logic                     uop_count,   // a non-reset micro-op issued this cycle
  output logic                     uop_re,
  output logic [LOG_UOP_DEPTH-1:0] uop_raddr,
  /* verilator lint_off UNUSEDSIGNAL */  // a micro-op's fields may not fill its 32 bits
  input  logic [31:0]              uop_rdata,
  /* verilator lint_on UNUSEDSIGNAL */
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
  output logic [LOG_ACC_DEPTH-1:0] acc_waddr,
  output logic [ACC_ELEM_BITS-1:0] acc_wdata,
  output logic [OUT_ELEM_BITS-1:0] out_wdata
);
  typedef enum logic [1:0] {S_IDLE, S_SETUP, S_ISSUE, S_DRAIN} state_t;
  state_t state;
  logic reset_mode;
  logic [31:0] uop_begin, uop_end, iter_out, iter_in;
  logic [31:0] dst_out, dst_in, src_out, src_in, wgt_out, wgt_in;
  logic [31:0] cnt, i, j, u;
  logic [31:0] dst_i, src_i, wgt_i, dst_ij, src_ij, wgt_ij;
  logic empty, u_last, j_last, i_last;

  assign empty = iter_out == 0 || iter_in == 0 || uop_end <= uop_begin;
  assign u_last = u == uop_end - 1;
  assign j_last = j == iter_in - 1;
  assign i_last = i == iter_out - 1;
  assign busy = state != S_IDLE;
  assign last = state == S_DRAIN && cnt == 0;

  logic issue;
  assign issue = state == S_ISSUE;
  assign uop_re = issue;
  assign uop_raddr = u[LOG_UOP_DEPTH-1:0];
  assign uop_count = issue && !reset_mode;

  always_ff @(posedge clk) begin
    if (rst) state <= S_IDLE;
    else begin
      if (start) begin
        reset_mode <= insn[GEMM_RESET_LSB];
        uop_begin <= 32'(insn[GEMM_UOP_BEGIN_LSB +: GEMM_UOP_BEGIN_W]);
        uop_end <= 32'(insn[GEMM_UOP_END_LSB +: GEMM_UOP_END_W]);
        iter_out <= 32'(insn[GEMM_ITER_OUT_LSB +: GEMM_ITER_OUT_W]);
        iter_in <= 32'(insn[GEMM_ITER_IN_LSB +: GEMM_ITER_IN_W]);
        dst_out <= 32'(insn[GEMM_DST_FACTOR_OUT_LSB +: GEMM_DST_FACTOR_OUT_W]);
        dst_in <= 32'(insn[GEMM_DST_FACTOR_IN_LSB +: GEMM_DST_FACTOR_IN_W]);
        src_out <= 32'(insn[GEMM_SRC_FACTOR_OUT_LSB +: GEMM_SRC_FACTOR_OUT_W]);
        src_in <= 32'(insn[GEMM_SRC_FACTOR_IN_LSB +: GEMM_SRC_FACTOR_IN_W]);
        wgt_out <= 32'(insn[GEMM_WGT_FACTOR_OUT_LSB +: GEMM_WGT_FACTOR_OUT_W]);
        wgt_in <= 32'(insn[GEMM_WGT_FACTOR_IN_LSB +: GEMM_WGT_FACTOR_IN_W]);
        cnt <= 32'(GEMM_SETUP_CYCLES - 2);
        state <= S_SETUP;
      end
      unique case (state)
        S_SETUP: begin
          cnt <= cnt - 1;
          if (cnt == 0) begin
            i <= '0; j <= '0; u <= uop_begin;
            dst_i <= '0; src_i <= '0; wgt_i <= '0;
            dst_ij <= '0; src_ij <= '0; wgt_ij <= '0;
            if (empty) begin
              state <= S_DRAIN;
              cnt <= 32'(GEMM_PIPELINE_DEPTH - 1);
            end else state <= S_ISSUE;
          end
        end
        S_ISSUE: begin
          u <= u + 1;
          if (u_last) begin
            u <= uop_begin;
            j <= j + 1;
            dst_ij <= dst_ij + dst_in; src_ij <= src_ij + src_in; wgt_ij <= wgt_ij + wgt_in;
            if (j_last) begin
              j <= '0;
              i <= i + 1;
              dst_i <= dst_i + dst_out; src_i <= src_i + src_out; wgt_i <= wgt_i + wgt_out;
              dst_ij <= dst_i + dst_out; src_ij <= src_i + src_out; wgt_ij <= wgt_i + wgt_out;
              if (i_last) begin
                state <= S_DRAIN;
                cnt <= 32'(GEMM_PIPELINE_DEPTH - 1);
              end
            end
          end
        end
        S_DRAIN: begin
          cnt <= cnt - 1;
          if (cnt == 0) state <= S_IDLE;
        end
        default: ;
      endcase
    end
  end

  // ---- pipeline ------------------------------------------------------------------------
  logic v1, v2, v3, v4;
  logic [31:0] off_dst1, off_src1, off_wgt1;
  logic [LOG_ACC_DEPTH-1:0] a2, a3, a4;
  logic r1, r2, r3, r4;

  // stage 1: indices
  logic [31:0] a1, x1, w1;
  logic bad1;
  assign a1 = 32'(uop_rdata[UOP_DST_LSB +: UOP_DST_W]) + off_dst1;
  assign x1 = 32'(uop_rdata[UOP_SRC_LSB +: UOP_SRC_W]) + off_src1;
  assign w1 = 32'(uop_rdata[UOP_WGT_LSB +: UOP_WGT_W]) + off_wgt1;
  assign bad1 = a1 >= 32'(ACC_DEPTH) || (!r1 && (x1 >= 32'(INP_DEPTH) || w1 >= 32'(WGT_DEPTH)));
  // a micro-op range past the micro-op SRAM (or reversed) is an error too, as in the simulator
  logic bad_range;
  assign bad_range = start && (32'(insn[GEMM_UOP_END_LSB +: GEMM_UOP_END_W]) > 32'(UOP_DEPTH)
                               || 32'(insn[GEMM_UOP_BEGIN_LSB +: GEMM_UOP_BEGIN_W]) > 32'(insn[GEMM_UOP_END_LSB +: GEMM_UOP_END_W]));
  assign err_range = (v1 && bad1) || bad_range;
  assign inp_re = v1 && !r1;
  assign wgt_re = v1 && !r1;
  assign inp_raddr = x1[LOG_INP_DEPTH-1:0];
  assign wgt_raddr = w1[LOG_WGT_DEPTH-1:0];

  // stage 2: products (weights are stored [out][in]). inp[k]*w[o][k] and inp[k]*w[o+1][k]
  // share the input operand, so one signed 8 x 25 multiply inp[k] * (w[o+1][k] * 2^16 +
  // w[o][k]) yields both: half the multipliers (one DSP48E1 each; see README).
  localparam int PAIRS = BLOCK / 2;
  logic [BATCH*PAIRS*BLOCK*32-1:0] pair3;   // [b][q][k]: 32-bit packed product pair
  generate
    for (genvar b = 0; b < BATCH; b++) begin : g_b
      for (genvar q = 0; q < PAIRS; q++) begin : g_q
        for (genvar k = 0; k < BLOCK; k++) begin : g_k
          logic signed [7:0] x, w_lo, w_hi;
          logic signed [24:0] w_pair;   // w_hi * 2^16 + w_lo needs 25 bits (DSP48E1 A port)
          logic signed [31:0] p;
          assign x = inp_rdata[(b*BLOCK + k)*8 +: 8];
          assign w_lo = wgt_rdata[((2*q)*BLOCK + k)*8 +: 8];
          assign w_hi = wgt_rdata[((2*q + 1)*BLOCK + k)*8 +: 8];
          assign w_pair = 25'($signed({w_hi, 16'd0})) + 25'(w_lo);
          assign p = x * w_pair;
          always_ff @(posedge clk) pair3[((b*PAIRS + q)*BLOCK + k)*32 +: 32] <= p;
        end
      end
    end
  endgenerate

  // stage 3: unpack (low half: x*w_lo as signed 16 bit; high half: the rest, +1 when the low
  // product was negative) and reduce over BLOCK_IN
  logic [BATCH*BLOCK*32-1:0] sum4;          // [b][o], 32 bit each
  always_ff @(posedge clk) begin
    v1 <= !rst && issue;
    off_dst1 <= dst_ij; off_src1 <= src_ij; off_wgt1 <= wgt_ij; r1 <= reset_mode;
    v2 <= !rst && v1 && !bad1; a2 <= a1[LOG_ACC_DEPTH-1:0]; r2 <= r1;
    v3 <= !rst && v2; a3 <= a2; r3 <= r2;
    v4 <= !rst && v3; a4 <= a3; r4 <= r3;
    for (int b = 0; b < BATCH; b++)
      for (int q = 0; q < PAIRS; q++) begin
        logic [31:0] s_lo, s_hi;
        s_lo = '0;
        s_hi = '0;
        for (int k = 0; k < BLOCK; k++) begin
          logic [31:0] p;
          p = pair3[((b*PAIRS + q)*BLOCK + k)*32 +: 32];
          s_lo = s_lo + 32'($signed(p[15:0]));
          s_hi = s_hi + 32'($signed(p[31:16])) + 32'(p[15]);
        end
        sum4[(b*BLOCK + 2*q)*32 +: 32] <= s_lo;
        sum4[(b*BLOCK + 2*q + 1)*32 +: 32] <= s_hi;
      end
  end

  assign acc_re = v3 && !r3;
  assign acc_raddr = a3;

  // stage 4: accumulate and write
  assign acc_we = v4;
  assign acc_waddr = a4;
  always_comb begin
    for (int b = 0; b < BATCH; b++)
      for (int o = 0; o < BLOCK; o++) begin
        logic [31:0] v;
        v = r4 ? 32'd0 : acc_rdata[(b*BLOCK + o)*32 +: 32] + sum4[(b*BLOCK + o)*32 +: 32];
        acc_wdata[(b*BLOCK + o)*32 +: 32] = v;
        out_wdata[(b*BLOCK + o)*8 +: 8] = v[7:0];
      end
  end
endmodule
