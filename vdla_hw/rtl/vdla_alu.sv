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
// The reset bit of the instruction (ALU_RESET_LSB) is ignored: an ALU instruction always
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
  input  logic [127:0]             insn,
  output logic                     busy,
  output logic                     last,
  output logic                     err_range,
  output logic                     uop_count,
  output logic                     uop_re,
  output logic [LOG_UOP_DEPTH-1:0] uop_raddr,
  /* verilator lint_off UNUSEDSIGNAL */  // the ALU has no weight operand: the wgt field is unused
  input  logic [31:0]              uop_rdata,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                     acc_re,
  output logic [LOG_ACC_DEPTH-1:0] acc_raddr,
  input  logic [ACC_ELEM_BITS-1:0] acc_rdata,
  output logic                     acc_we,
  output logic [LOG_ACC_DEPTH-1:0] acc_waddr,
  output logic [ACC_ELEM_BITS-1:0] acc_wdata,
  output logic [OUT_ELEM_BITS-1:0] out_wdata
);
  localparam int LANES = BATCH * BLOCK;
  typedef enum logic [1:0] {S_IDLE, S_SETUP, S_ISSUE, S_DRAIN} state_t;
  state_t state;
  logic use_imm;
  logic [2:0] op;
  logic [31:0] imm;
  logic [31:0] uop_begin, uop_end, iter_out, iter_in, dst_out, dst_in, src_out, src_in;
  logic [31:0] cnt, slot, per, i, j, u, dst_i, src_i, dst_ij, src_ij;
  logic empty, u_last, j_last, i_last, slot_last;

  assign empty = iter_out == 0 || iter_in == 0 || uop_end <= uop_begin;
  assign u_last = u == uop_end - 1;
  assign j_last = j == iter_in - 1;
  assign i_last = i == iter_out - 1;
  assign per = use_imm ? 32'(ALU_IMM_CYCLES_PER_UOP) : 32'(ALU_TENSOR_CYCLES_PER_UOP);
  assign slot_last = slot == per - 1;
  assign busy = state != S_IDLE;
  assign last = state == S_DRAIN && cnt == 0;

  logic issue;
  assign issue = state == S_ISSUE && slot == 0;
  assign uop_re = issue;
  assign uop_raddr = u[LOG_UOP_DEPTH-1:0];
  assign uop_count = issue;

  always_ff @(posedge clk) begin
    if (rst) state <= S_IDLE;
    else begin
      if (start) begin
        use_imm <= insn[ALU_USE_IMM_LSB];
        op <= insn[ALU_ALU_OPCODE_LSB +: 3];
        imm <= 32'($signed(insn[ALU_IMM_LSB +: ALU_IMM_W]));
        uop_begin <= 32'(insn[ALU_UOP_BEGIN_LSB +: ALU_UOP_BEGIN_W]);
        uop_end <= 32'(insn[ALU_UOP_END_LSB +: ALU_UOP_END_W]);
        iter_out <= 32'(insn[ALU_ITER_OUT_LSB +: ALU_ITER_OUT_W]);
        iter_in <= 32'(insn[ALU_ITER_IN_LSB +: ALU_ITER_IN_W]);
        dst_out <= 32'(insn[ALU_DST_FACTOR_OUT_LSB +: ALU_DST_FACTOR_OUT_W]);
        dst_in <= 32'(insn[ALU_DST_FACTOR_IN_LSB +: ALU_DST_FACTOR_IN_W]);
        src_out <= 32'(insn[ALU_SRC_FACTOR_OUT_LSB +: ALU_SRC_FACTOR_OUT_W]);
        src_in <= 32'(insn[ALU_SRC_FACTOR_IN_LSB +: ALU_SRC_FACTOR_IN_W]);
        cnt <= 32'(ALU_SETUP_CYCLES - 2);
        state <= S_SETUP;
      end
      unique case (state)
        S_SETUP: begin
          cnt <= cnt - 1;
          if (cnt == 0) begin
            i <= '0; j <= '0; u <= uop_begin; slot <= '0;
            dst_i <= '0; src_i <= '0; dst_ij <= '0; src_ij <= '0;
            if (empty) begin
              state <= S_DRAIN;
              cnt <= 32'(ALU_PIPELINE_DEPTH - 1);
            end else state <= S_ISSUE;
          end
        end
        S_ISSUE: begin
          slot <= slot_last ? '0 : slot + 1;
          if (slot_last) begin
            u <= u + 1;
            if (u_last) begin
              u <= uop_begin;
              j <= j + 1;
              dst_ij <= dst_ij + dst_in; src_ij <= src_ij + src_in;
              if (j_last) begin
                j <= '0;
                i <= i + 1;
                dst_i <= dst_i + dst_out; src_i <= src_i + src_out;
                dst_ij <= dst_i + dst_out; src_ij <= src_i + src_out;
                if (i_last) begin
                  state <= S_DRAIN;
                  cnt <= 32'(ALU_PIPELINE_DEPTH - 1);
                end
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
  logic v1, v2, v3;
  logic [31:0] off_dst1, off_src1;
  logic [LOG_ACC_DEPTH-1:0] d2, s2, d3;
  logic [31:0] d1, s1;
  logic bad1;
  logic [ACC_ELEM_BITS-1:0] held3;

  assign d1 = 32'(uop_rdata[UOP_DST_LSB +: UOP_DST_W]) + off_dst1;
  assign s1 = 32'(uop_rdata[UOP_SRC_LSB +: UOP_SRC_W]) + off_src1;
  assign bad1 = d1 >= 32'(ACC_DEPTH) || (!use_imm && s1 >= 32'(ACC_DEPTH));
  // a micro-op range past the micro-op SRAM (or reversed) is an error too, as in the simulator
  logic bad_range;
  assign bad_range = start && (32'(insn[ALU_UOP_END_LSB +: ALU_UOP_END_W]) > 32'(UOP_DEPTH)
                               || 32'(insn[ALU_UOP_BEGIN_LSB +: ALU_UOP_BEGIN_W]) > 32'(insn[ALU_UOP_END_LSB +: ALU_UOP_END_W]));
  assign err_range = (v1 && bad1) || bad_range;

  logic tensor2;
  assign tensor2 = v2 && !use_imm;
  always_ff @(posedge clk) begin
    v1 <= !rst && issue;
    off_dst1 <= dst_ij; off_src1 <= src_ij;
    v2 <= !rst && v1 && !bad1; d2 <= d1[LOG_ACC_DEPTH-1:0]; s2 <= s1[LOG_ACC_DEPTH-1:0];
    v3 <= !rst && tensor2; d3 <= d2;
    if (tensor2) held3 <= acc_rdata;
  end

  // one read port: stage 1 reads ACC[d], stage 2 (tensor) reads ACC[s]
  assign acc_re = v1 || tensor2;
  assign acc_raddr = tensor2 ? s2 : d1[LOG_ACC_DEPTH-1:0];


  // immediate micro-ops write from stage 2, tensor micro-ops from stage 3
  logic write2;
  assign write2 = v2 && use_imm;
  assign acc_we = write2 || v3;
  assign acc_waddr = v3 ? d3 : d2;
  generate
    for (genvar l = 0; l < LANES; l++) begin : g_lane
      logic [31:0] a, b, y;
      assign a = v3 ? held3[l*32 +: 32] : acc_rdata[l*32 +: 32];
      assign b = v3 ? acc_rdata[l*32 +: 32] : imm;
      vdla_alu_lane u_lane (.op, .a, .b, .y);
      assign acc_wdata[l*32 +: 32] = y;
      assign out_wdata[l*8 +: 8] = y[7:0];
    end
  endgenerate
endmodule
