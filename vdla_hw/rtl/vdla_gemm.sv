// The GEMM core: one micro-op per cycle over the loop nest
//   for i < iter_out, j < iter_in, u in [uop_begin, uop_end)
// then a GEMM_PIPELINE_DEPTH-cycle drain. Pipeline of micro-op k issued in cycle c:
//   c   read uop SRAM
//   c+1 form indices a/x/w (loop offsets added), read INP[x] and WGT[w]
//   c+2 BATCH x BLOCK_OUT x BLOCK_IN products
//   c+3 reduce over BLOCK_IN; read ACC[a]
//   c+4 ACC[a] += sum, OUT[a] = its low OUT_BITS; write at the end of c+4
// so micro-op k+2 (reads ACC in c+5) sees k's write: acc_raw_min_distance = 2, no forwarding.
// DEPTHWISE (`depthwise`, vdla.hw.depthwise) runs the same pipeline: the last DEPTHWISE_TAPS-1
// inputs wait in `win` in front of the multipliers, row pair (2q, 2q+1) puts row 2q's taps on
// the low product of multipliers 0..TAPS-1 and row 2q+1's on the high product of multipliers
// TAPS..2*TAPS-1 (the reduction is unchanged), and a row's first TAPS-1 micro-ops do not write.
// With the instruction's requant bit (latched at start, `requant`) the compute module writes
// OUT through the requantizer, REQUANT_PIPELINE_DEPTH cycles after the ACC write, and the
// drain is that much longer.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_gemm (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     start,
  input  logic                     depthwise,   // the instruction is DEPTHWISE (GEMM's fields)
  /* verilator lint_off UNUSEDSIGNAL */  // the owner decodes the header; the padding is zero
  input  vdla_pkg::gemm_insn_t     insn,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                     busy,
  output logic                     last,
  output logic                     err_range,
  output logic                     requant,     // the instruction's requant bit
  output logic                     uop_count,   // a non-reset micro-op issued this cycle
  output logic                     uop_re,
  output logic [LOG_UOP_DEPTH-1:0] uop_raddr,
  /* verilator lint_off UNUSEDSIGNAL */  // a micro-op's fields may not fill its word
  input  vdla_pkg::uop_t           uop_rdata,
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
  localparam int IX_DST = 0, IX_SRC = 1, IX_WGT = 2;   // the loop's index streams
  logic reset_mode, issue, dw;
  logic [LOG_UOP_DEPTH-1:0] dw_begin;
  logic [2:0][31:0] offset;
  always_ff @(posedge clk) if (start) begin
    reset_mode <= insn.reset;
    requant <= insn.requant;
    dw <= depthwise;
    dw_begin <= LOG_UOP_DEPTH'(insn.uop_begin);
  end
  vdla_uop_loop #(.STREAMS(3), .SETUP_CYCLES(GEMM_SETUP_CYCLES), .DRAIN_CYCLES(GEMM_PIPELINE_DEPTH),
                  .EXTRA_DRAIN_CYCLES(REQUANT_PIPELINE_DEPTH)) u_loop (
    .clk, .rst, .start,
    .uop_begin(32'(insn.uop_begin)), .uop_end(32'(insn.uop_end)),
    .iter_out(32'(insn.iter_out)), .iter_in(32'(insn.iter_in)),
    .factor_out({32'(insn.wgt_factor_out), 32'(insn.src_factor_out), 32'(insn.dst_factor_out)}),
    .factor_in({32'(insn.wgt_factor_in), 32'(insn.src_factor_in), 32'(insn.dst_factor_in)}),
    .cycles_per_uop(32'd1), .extra_drain(insn.requant),
    .busy, .last, .issue, .uop_addr(uop_raddr), .offset, .err_range(bad_range));
  assign uop_re = issue;
  assign uop_count = issue && !reset_mode;

  // ---- pipeline ------------------------------------------------------------------------
  logic v1, v2, v3, v4;
  logic [2:0][31:0] off1;
  logic [LOG_ACC_DEPTH-1:0] a2, a3, a4;
  logic r1, r2, r3, r4;
  logic p1, p2, p3, p4;     // a DEPTHWISE micro-op that only fills the window (writes nothing)
  logic prime;
  logic [31:0] dw_step;     // the micro-op's place in its row
  assign dw_step = 32'(uop_raddr - dw_begin);
  assign prime = dw && dw_step < 32'(DEPTHWISE_TAPS - 1);

  // stage 1: indices
  logic [31:0] a1, x1, w1;
  logic bad1, bad_range;
  assign a1 = 32'(uop_rdata.dst) + off1[IX_DST];
  assign x1 = 32'(uop_rdata.src) + off1[IX_SRC];
  assign w1 = 32'(uop_rdata.wgt) + off1[IX_WGT];
  assign bad1 = a1 >= 32'(ACC_DEPTH) || (!r1 && (x1 >= 32'(INP_DEPTH) || w1 >= 32'(WGT_DEPTH)));
  assign err_range = (v1 && bad1) || bad_range;
  assign inp_re = v1 && !r1;
  assign wgt_re = v1 && !r1;
  assign inp_raddr = x1[LOG_INP_DEPTH-1:0];
  assign wgt_raddr = w1[LOG_WGT_DEPTH-1:0];

  // stage 2: products (weights are stored [out][in]). inp[k]*w[o][k] and inp[k]*w[o+1][k]
  // share the input operand, so one signed multiply inp[k] * (w[o+1][k] * 2^PROD +
  // w[o][k]) yields both: half the multipliers (int8: 8 x 25 bits, one DSP48E1 each; see README).
  // DEPTHWISE: tap t of the window is win[t] for t < TAPS-1, then this micro-op's input.
  localparam int TAPS = DEPTHWISE_TAPS;
  logic [TAPS-2:0][INP_ELEM_BITS-1:0] win;
  /* verilator lint_off UNUSEDSIGNAL */  // a config without DEPTHWISE (BLOCK < 2*TAPS) reads no tap
  logic [TAPS-1:0][INP_ELEM_BITS-1:0] taps;
  /* verilator lint_on UNUSEDSIGNAL */
  assign taps = {inp_rdata, win};
  always_ff @(posedge clk) if (v2 && !r2 && dw) win <= {inp_rdata, win[TAPS-2:1]};   // oldest first
  localparam int PROD = INP_BITS + WGT_BITS;   // one product, signed
  localparam int PAIR = 2 * PROD;              // two products packed
  localparam int PAIRS = BLOCK / 2;
  localparam int WP = PROD + WGT_BITS + 1;     // w_hi * 2^PROD + w_lo (int8: 25 bits, the DSP48E1 A port)
  logic [BATCH*PAIRS*BLOCK*PAIR-1:0] pair3;   // [b][q][k]: one packed product pair
  generate
    for (genvar b = 0; b < BATCH; b++) begin : g_b
      for (genvar q = 0; q < PAIRS; q++) begin : g_q
        for (genvar k = 0; k < BLOCK; k++) begin : g_k
          logic signed [INP_BITS-1:0] x, x_dw;
          logic signed [WGT_BITS-1:0] w_lo, w_hi, w_lo_dw, w_hi_dw;
          logic signed [WP-1:0] w_pair;
          logic signed [PAIR-1:0] p;
          if (DEPTHWISE_OK != 0 && k < TAPS) begin : g_dw_lo          // row 2q's tap k
            assign x_dw = taps[k][(b*BLOCK + 2*q)*INP_BITS +: INP_BITS];
            assign w_lo_dw = wgt_rdata[((2*q)*BLOCK + k)*WGT_BITS +: WGT_BITS];
            assign w_hi_dw = '0;
          end else if (DEPTHWISE_OK != 0 && k < 2*TAPS) begin : g_dw_hi   // row 2q+1's tap k - TAPS
            assign x_dw = taps[k - TAPS][(b*BLOCK + 2*q + 1)*INP_BITS +: INP_BITS];
            assign w_lo_dw = '0;
            assign w_hi_dw = wgt_rdata[((2*q + 1)*BLOCK + k - TAPS)*WGT_BITS +: WGT_BITS];
          end else begin : g_dw_none
            assign x_dw = '0;
            assign w_lo_dw = '0;
            assign w_hi_dw = '0;
          end
          assign x = dw ? x_dw : inp_rdata[(b*BLOCK + k)*INP_BITS +: INP_BITS];
          assign w_lo = dw ? w_lo_dw : wgt_rdata[((2*q)*BLOCK + k)*WGT_BITS +: WGT_BITS];
          assign w_hi = dw ? w_hi_dw : wgt_rdata[((2*q + 1)*BLOCK + k)*WGT_BITS +: WGT_BITS];
          assign w_pair = WP'($signed({w_hi, {PROD{1'b0}}})) + WP'(w_lo);
          assign p = x * w_pair;
          always_ff @(posedge clk) pair3[((b*PAIRS + q)*BLOCK + k)*PAIR +: PAIR] <= p;
        end
      end
    end
  endgenerate

  // stage 3: unpack (low half: x*w_lo as a signed PROD-bit number; high half: the rest, +1
  // when the low product was negative) and reduce over BLOCK_IN
  logic [BATCH*BLOCK*ACC_BITS-1:0] sum4;          // [b][o]
  always_ff @(posedge clk) begin
    v1 <= !rst && issue;
    off1 <= offset; r1 <= reset_mode; p1 <= prime;
    v2 <= !rst && v1 && !bad1; a2 <= a1[LOG_ACC_DEPTH-1:0]; r2 <= r1; p2 <= p1;
    v3 <= !rst && v2; a3 <= a2; r3 <= r2; p3 <= p2;
    v4 <= !rst && v3; a4 <= a3; r4 <= r3; p4 <= p3;
    for (int b = 0; b < BATCH; b++)
      for (int q = 0; q < PAIRS; q++) begin
        logic [ACC_BITS-1:0] s_lo, s_hi;
        s_lo = '0;
        s_hi = '0;
        for (int k = 0; k < BLOCK; k++) begin
          logic [PAIR-1:0] p;
          p = pair3[((b*PAIRS + q)*BLOCK + k)*PAIR +: PAIR];
          s_lo = s_lo + ACC_BITS'($signed(p[PROD-1:0]));
          s_hi = s_hi + ACC_BITS'($signed(p[PAIR-1:PROD])) + ACC_BITS'(p[PROD-1]);
        end
        sum4[(b*BLOCK + 2*q)*ACC_BITS +: ACC_BITS] <= s_lo;
        sum4[(b*BLOCK + 2*q + 1)*ACC_BITS +: ACC_BITS] <= s_hi;
      end
  end

  assign acc_re = v3 && !r3 && !p3;
  assign acc_raddr = a3;

  // stage 4: accumulate and write (OUT the low bits; with requant the compute module writes
  // OUT from acc_wdata through the requantizer instead)
  assign acc_we = v4 && !p4;
  assign acc_waddr = a4;
  always_comb begin
    for (int b = 0; b < BATCH; b++)
      for (int o = 0; o < BLOCK; o++) begin
        logic [ACC_BITS-1:0] v;
        v = r4 ? '0 : acc_rdata[(b*BLOCK + o)*ACC_BITS +: ACC_BITS] + sum4[(b*BLOCK + o)*ACC_BITS +: ACC_BITS];
        acc_wdata[(b*BLOCK + o)*ACC_BITS +: ACC_BITS] = v;
        out_wdata[(b*BLOCK + o)*OUT_BITS +: OUT_BITS] = v[OUT_BITS-1:0];
      end
  end
endmodule
