// The tensor ALU: the GEMM loop nest, one micro-op every ALU_IMM_CYCLES_PER_UOP cycles with
// an immediate operand or every ALU_TENSOR_CYCLES_PER_UOP cycles with a tensor operand (the
// accumulator has one read port and a tensor op reads it twice), then an
// ALU_PIPELINE_DEPTH-cycle drain. Micro-op issued in cycle c:
//   c   read uop SRAM
//   c+1 form d/s, read ACC[d]
//   c+2 immediate: write ACC[d] = op(ACC[d], imm) at the end of c+2
//       tensor: hold ACC[d], read ACC[s]
//   c+3 tensor: write ACC[d] = op(ACC[d], ACC[s])
// A micro-op two places later reads ACC[d] no earlier than c+3 (imm) or c+5 (tensor), after
// the write; the next micro-op's source read (tensor, c+4) also sees it.
// LUT looks each lane's operand a up in that lane's copy of the lookup table (vdla_lut, an
// asynchronous read), so it writes in the same stage as the other ops; LOAD LUT writes every
// copy through the lut_* port (the compute module's DMA).
// SETQ (vdla.hw.requantizer) writes requantizer register d <- the operand b in every lane
// (rq_we / rq_idx / rq_wdata, in the stage where the other ops write ACC) and neither ACC nor
// OUT; its destination index must be below REQUANT_REGS (else err_range, as for an ACC index
// past the SRAM). With the instruction's requant bit (latched at start, `requant`) the
// compute module writes OUT through the requantizer, REQUANT_PIPELINE_DEPTH cycles after the
// ACC write, and the drain is that much longer (for SETQ too: the timing reads only the bit).
// FLUSH computes like ADD but writes 0 to ACC[d]: its sum leaves on res_wdata, which OUT's
// write-back (low bits or the requantizer) takes instead of the ACC write data.
// The reset bit of the instruction (alu_insn_t.reset) is ignored: an ALU instruction always
// computes, as in VTA (vdla_hw/isa.py). Only GEMM zeroes its destinations.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_alu (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     start,
  /* verilator lint_off UNUSEDSIGNAL */  // the owner decodes the header; the padding is zero
  input  vdla_pkg::alu_insn_t      insn,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                     busy,
  output logic                     last,
  output logic                     err_range,
  output logic                     requant,     // the instruction's requant bit
  output logic                     uop_count,
  output logic                     uop_re,
  output logic [LOG_UOP_DEPTH-1:0] uop_raddr,
  /* verilator lint_off UNUSEDSIGNAL */  // the ALU has no weight operand: the wgt field is unused
  input  vdla_pkg::uop_t           uop_rdata,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                     acc_re,
  output logic [LOG_ACC_DEPTH-1:0] acc_raddr,
  input  logic [ACC_ELEM_BITS-1:0] acc_rdata,
  output logic                     acc_we,
  output logic [LOG_ACC_DEPTH-1:0] acc_waddr,
  output logic [ACC_ELEM_BITS-1:0] acc_wdata,
  output logic [OUT_ELEM_BITS-1:0] out_wdata,
  output logic [ACC_ELEM_BITS-1:0] res_wdata,   // what the write-back sees: acc_wdata but for FLUSH
  output logic                     rq_we,       // SETQ: requantizer register rq_idx <- rq_wdata (per lane)
  output logic [REQUANT_INDEX_BITS-1:0] rq_idx,
  output logic [ACC_ELEM_BITS-1:0] rq_wdata,
  input  logic                     lut_clear,   // simulation only (see README)
  input  logic                     lut_we,      // LOAD LUT, as vdla_lut takes it
  input  logic                     lut_pad,
  input  logic                     lut_pad_min,
  input  logic [LUT_ADDR_BITS-1:0] lut_elem,
  input  logic [31:0]              lut_beat,
  input  logic [BUS_BITS-1:0]      lut_wdata,
  input  logic [OUT_ELEM_BITS-1:0] wb_code,     // OUT's write-back: codes the requantizer made,
  output logic [OUT_ELEM_BITS-1:0] wb_entry     // and their entries in each lane's lookup table
);
  localparam int LANES = BATCH * BLOCK;
  localparam int IX_DST = 0, IX_SRC = 1;   // the loop's index streams
  localparam int MAX_CYCLES_PER_UOP = ALU_TENSOR_CYCLES_PER_UOP > ALU_IMM_CYCLES_PER_UOP
                                      ? ALU_TENSOR_CYCLES_PER_UOP : ALU_IMM_CYCLES_PER_UOP;
  logic use_imm, issue, bad_range;
  vdla_pkg::alu_op_e op;
  logic [ACC_BITS-1:0] imm;
  logic [1:0][31:0] offset;
  always_ff @(posedge clk) if (start) begin
    use_imm <= insn.use_imm;
    op <= insn.alu_opcode;
    imm <= ACC_BITS'($signed(insn.imm));
    requant <= insn.requant;
  end
  vdla_uop_loop #(.STREAMS(2), .SETUP_CYCLES(ALU_SETUP_CYCLES), .DRAIN_CYCLES(ALU_PIPELINE_DEPTH),
                  .MAX_CYCLES_PER_UOP(MAX_CYCLES_PER_UOP), .EXTRA_DRAIN_CYCLES(REQUANT_PIPELINE_DEPTH)) u_loop (
    .clk, .rst, .start,
    .uop_begin(32'(insn.uop_begin)), .uop_end(32'(insn.uop_end)),
    .iter_out(32'(insn.iter_out)), .iter_in(32'(insn.iter_in)),
    .factor_out({32'(insn.src_factor_out), 32'(insn.dst_factor_out)}),
    .factor_in({32'(insn.src_factor_in), 32'(insn.dst_factor_in)}),
    .cycles_per_uop(insn.use_imm ? 32'(ALU_IMM_CYCLES_PER_UOP) : 32'(ALU_TENSOR_CYCLES_PER_UOP)),
    .extra_drain(insn.requant), .busy, .last, .issue, .uop_addr(uop_raddr), .offset, .err_range(bad_range));
  assign uop_re = issue;
  assign uop_count = issue;

  // ---- pipeline ------------------------------------------------------------------------
  logic v1, v2, v3;
  logic [1:0][31:0] off1;
  logic [LOG_ACC_DEPTH-1:0] d2, s2, d3;
  logic [31:0] d1, s1;
  logic bad1;
  logic [ACC_ELEM_BITS-1:0] held3;

  assign d1 = 32'(uop_rdata.dst) + off1[IX_DST];
  assign s1 = 32'(uop_rdata.src) + off1[IX_SRC];
  logic setq, flush;
  assign setq = op == ALU_SETQ;
  assign flush = op == ALU_FLUSH;
  assign bad1 = d1 >= (setq ? 32'(REQUANT_REGS) : 32'(ACC_DEPTH)) || (!use_imm && s1 >= 32'(ACC_DEPTH));
  assign err_range = (v1 && bad1) || bad_range;

  logic tensor2;
  assign tensor2 = v2 && !use_imm;
  always_ff @(posedge clk) begin
    v1 <= !rst && issue;
    off1 <= offset;
    v2 <= !rst && v1 && !bad1; d2 <= d1[LOG_ACC_DEPTH-1:0]; s2 <= s1[LOG_ACC_DEPTH-1:0];
    v3 <= !rst && tensor2; d3 <= d2;
    if (tensor2) held3 <= acc_rdata;
  end

  // one read port: stage 1 reads ACC[d] (not SETQ: d names a register), stage 2 (tensor) reads ACC[s]
  assign acc_re = (v1 && !setq) || tensor2;
  assign acc_raddr = tensor2 ? s2 : d1[LOG_ACC_DEPTH-1:0];

  // immediate micro-ops write from stage 2, tensor micro-ops from stage 3
  logic write2;
  assign write2 = v2 && use_imm;
  assign acc_we = (write2 || v3) && !setq;
  assign acc_waddr = v3 ? d3 : d2;
  assign rq_we = (write2 || v3) && setq;
  assign rq_idx = REQUANT_INDEX_BITS'(acc_waddr);
  generate
    for (genvar l = 0; l < LANES; l++) begin : g_lane
      logic [ACC_BITS-1:0] a, b, y;
      assign a = v3 ? held3[l*ACC_BITS +: ACC_BITS] : acc_rdata[l*ACC_BITS +: ACC_BITS];
      assign b = v3 ? acc_rdata[l*ACC_BITS +: ACC_BITS] : imm;
      logic [TABLE_BITS-1:0] entry;
      vdla_lut u_lut (.clk, .clear(lut_clear), .we(lut_we), .pad(lut_pad), .pad_min(lut_pad_min), .elem(lut_elem),
                      .beat(lut_beat), .wdata(lut_wdata), .x(a), .entry,
                      .code(wb_code[l*OUT_BITS +: OUT_BITS]), .code_entry(wb_entry[l*OUT_BITS +: OUT_BITS]));
      vdla_alu_lane u_lane (.op, .a, .b, .entry, .y);
      assign acc_wdata[l*ACC_BITS +: ACC_BITS] = flush ? '0 : y;
      assign res_wdata[l*ACC_BITS +: ACC_BITS] = y;
      assign rq_wdata[l*ACC_BITS +: ACC_BITS] = b;
      assign out_wdata[l*OUT_BITS +: OUT_BITS] = y[OUT_BITS-1:0];
    end
  endgenerate
endmodule
