// One lane of the requantizer on OUT's write-back path (vdla.hw.requantizer): its three
// registers, which ALU SETQ loads (register `idx` <- wdata), and
//   y = min(max((((x + b) * m + round) >> s) + z, lo), hi),  round = 2^(s-1) if s > 0 else 0
// with b = BIAS, m = the low REQUANT_MUL_BITS of MUL (signed), s, z, lo, hi CTRL's fields
// (its table bit is handed out as table_bit: the compute module looks y up then);
// exact: x + b has ACC_BITS + 1 bits, the product ACC_BITS + REQUANT_MUL_BITS + 1, so one
// (ACC_BITS + 1) x REQUANT_MUL_BITS signed multiply (33 x 18: two DSP48E1).
// Timing: x is the value an ACC write of cycle c writes; y is its requantized value in cycle
// c + REQUANT_PIPELINE_DEPTH, when the compute module writes it to OUT. Stages:
//   c+1          x registered; (x + b) * m
//   c+2 .. c+D   the product registered D - 1 times (none when D = 1); in c+D the rounding
//                shift, the zero point and the clip
// The registers are read where they are used: they only change by SETQ, and an instruction
// ends after its last OUT write (the requant drain, vdla_uop_loop), so no write-back of an
// earlier instruction is in flight when SETQ runs.
// The rounding shift: (t + 2^(s-1)) >> s = ((2t >> s) + 1) >> 1 for every s >= 0 (for s = 0:
// (2t + 1) >> 1 = t), so one arithmetic shift of 2t and one increment. 2t >> s is saturated
// to SAT_BITS = CLIP_BITS + 3 bits first, which keeps the rounded value exact within
// -2^(CLIP_BITS+1) .. 2^(CLIP_BITS+1) and beyond that on the same side: z, lo and hi being
// CLIP_BITS-bit signed, a rounded value >= 2^CLIP_BITS - 1 clips to hi and one <= -2^CLIP_BITS
// to min(lo, hi), as the exact one does. So the adders and the clip are narrow, and the shift
// only has to deliver SAT_BITS bits and whether the result fits them (two steps, below).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_requant (
  input  logic                          clk,
  input  logic                          rst,
  input  logic                          clear,   // simulation only: zero the registers (see README)
  input  logic                          we,      // SETQ: register idx <- wdata
  input  logic [REQUANT_INDEX_BITS-1:0] idx,
  input  logic [ACC_BITS-1:0]           wdata,
  input  logic [ACC_BITS-1:0]           x,       // the accumulator value written this cycle
  output logic [OUT_BITS-1:0]           y,       // its requantized value, REQUANT_PIPELINE_DEPTH cycles later
  output logic                          table_bit  // CTRL's table bit: OUT takes the lookup table's entry for y
);
  localparam int XB_BITS = ACC_BITS + 1;                  // x + b, exact
  localparam int PROD_BITS = XB_BITS + REQUANT_MUL_BITS;  // (x + b) * m, exact
  localparam int CLIP_BITS = REQUANT_ZERO_W;              // z, lo, hi (the package checks they are OUT lanes)
  localparam int SAT_BITS = CLIP_BITS + 3;                // the shifted 2t, saturated

  // ---- registers (SETQ) ------------------------------------------------------------------
  logic [REQUANT_REGS-1:0][ACC_BITS-1:0] regs;
  always_ff @(posedge clk) begin
    for (int r = 0; r < REQUANT_REGS; r++)
      if (we && idx == REQUANT_INDEX_BITS'(r)) regs[r] <= wdata;
    if (rst) regs <= '0;
`ifndef SYNTHESIS
    // Testbenches start every launch with zeroed registers, like the simulator does.
    if (clear) regs <= '0;
`endif
  end
`ifdef SYNTHESIS
  logic unused_clear;
  assign unused_clear = clear;
`endif
  logic [ACC_BITS-1:0] bias, ctrl;
  logic [ACC_BITS-1:0] mul_word;
  assign bias = regs[REQUANT_BIAS];
  assign mul_word = regs[REQUANT_MUL];
  assign ctrl = regs[REQUANT_CTRL];
  logic [REQUANT_SHIFT_W-1:0] shift;
  logic signed [CLIP_BITS-1:0] zero, lo, hi;
  assign shift = ctrl[REQUANT_SHIFT_LSB +: REQUANT_SHIFT_W];
  assign zero = ctrl[REQUANT_ZERO_LSB +: REQUANT_ZERO_W];
  assign lo = ctrl[REQUANT_LO_LSB +: REQUANT_LO_W];
  assign hi = ctrl[REQUANT_HI_LSB +: REQUANT_HI_W];
  assign table_bit = ctrl[REQUANT_TABLE_LSB];
  /* verilator lint_off UNUSEDSIGNAL */  // MUL's bits above the multiplier, CTRL's gaps
  logic unused_bits;
  assign unused_bits = ^{mul_word[ACC_BITS-1:REQUANT_MUL_BITS], ctrl};
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- c+1: (x + b) * m --------------------------------------------------------------------
  logic signed [ACC_BITS-1:0] x1;
  always_ff @(posedge clk) x1 <= x;
  logic signed [XB_BITS-1:0] xb;
  logic signed [REQUANT_MUL_BITS-1:0] m;
  logic signed [PROD_BITS-1:0] prod;
  assign xb = $signed({x1[ACC_BITS-1], x1}) + $signed({bias[ACC_BITS-1], bias});
  assign m = mul_word[REQUANT_MUL_BITS-1:0];
  assign prod = xb * m;

  // ---- c+2 .. c+D: the product registered D - 1 times ----------------------------------------
  // (a flat vector: Yosys does not resolve a packed array declared inside a generate block)
  localparam int DELAYS = REQUANT_PIPELINE_DEPTH - 1;
  logic signed [PROD_BITS-1:0] t;
  generate
    if (DELAYS == 0) begin : g_no_delay
      assign t = prod;
    end else begin : g_delay
      logic [DELAYS*PROD_BITS-1:0] line;
      always_ff @(posedge clk) line <= (DELAYS*PROD_BITS)'({line, prod});
      assign t = line[DELAYS*PROD_BITS-1 -: PROD_BITS];
    end
  endgenerate

  // ---- c+D: round, shift, zero point, clip -----------------------------------------------------
  // (every operand is declared signed and widened by concatenation: the compares and the
  // arithmetic shifts are signed, with no size cast whose signedness a tool might read otherwise)
  logic signed [PROD_BITS:0] twice;
  logic sign, fits;
  logic signed [SAT_BITS-1:0] sat;
  logic signed [SAT_BITS:0] sat_wide, inc, rounded, zero_wide, lo_wide, hi_wide, v, clipped;
  assign twice = {t, 1'b0};
  assign sign = t[PROD_BITS-1];
  // The shift in two steps, so that neither is as wide as 2t: a coarse one by a multiple of
  // STEP picks a WIN-bit window of 2t (sign-extended), then a fine one by 0 .. STEP - 1 shifts
  // the window. Only SAT_BITS of the result matter, and whether it fits them: it does when the
  // window holds 2t >>> coarse whole (the bits above it copy the sign) and the fine shift's
  // result fits SAT_BITS; otherwise the result is beyond SAT_BITS on the side of its sign.
  localparam int FINE_BITS = REQUANT_SHIFT_W / 2;
  localparam int COARSE_BITS = REQUANT_SHIFT_W - FINE_BITS;
  localparam int STEP = 1 << FINE_BITS;
  localparam int WIN = SAT_BITS + STEP - 1;
  localparam int EXT = PROD_BITS + 1 + (1 << COARSE_BITS) * STEP;     // every window inside
  logic [EXT-1:0] ext;
  logic [(1 << COARSE_BITS)-1:0][WIN-1:0] windows;
  logic [(1 << COARSE_BITS)-1:0] whole;
  assign ext = {{(EXT-PROD_BITS-1){sign}}, twice};
  always_comb
    for (int k = 0; k < (1 << COARSE_BITS); k++) begin
      windows[k] = ext[k*STEP +: WIN];
      whole[k] = 1'b1;
      for (int i = k*STEP + WIN - 1; i < EXT; i++) whole[k] = whole[k] && ext[i] == sign;
    end
  logic [COARSE_BITS-1:0] coarse;
  logic [FINE_BITS-1:0] fine;
  logic signed [WIN-1:0] window, shifted;
  assign coarse = shift[REQUANT_SHIFT_W-1 -: COARSE_BITS];
  assign fine = shift[FINE_BITS-1:0];
  assign window = windows[coarse];
  assign shifted = window >>> fine;
  // shifted fits SAT_BITS when its bits from SAT_BITS - 1 up all copy the sign
  assign fits = whole[coarse] && (&shifted[WIN-1:SAT_BITS-1] || !(|shifted[WIN-1:SAT_BITS-1]));
  assign sat = fits ? shifted[SAT_BITS-1:0] : {sign, {(SAT_BITS-1){!sign}}};
  assign sat_wide = {sat[SAT_BITS-1], sat};
  assign inc = sat_wide + 1'b1;
  assign rounded = inc >>> 1;
  assign zero_wide = {{(SAT_BITS+1-CLIP_BITS){zero[CLIP_BITS-1]}}, zero};
  assign lo_wide = {{(SAT_BITS+1-CLIP_BITS){lo[CLIP_BITS-1]}}, lo};
  assign hi_wide = {{(SAT_BITS+1-CLIP_BITS){hi[CLIP_BITS-1]}}, hi};
  assign v = rounded + zero_wide;
  always_comb begin
    clipped = v < lo_wide ? lo_wide : v;
    if (clipped > hi_wide) clipped = hi_wide;
  end
  assign y = clipped[OUT_BITS-1:0];
endmodule
