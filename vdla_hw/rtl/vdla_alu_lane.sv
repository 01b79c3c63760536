// One accumulator lane of the ALU (SPEC §3, vdla.hw.alu_ops): MIN/MAX signed, ADD and MUL
// wrap (the low ACC_BITS), FLUSH adds like ADD, SHR by the low ALU_SHIFT_BITS of b read as a signed number:
// >= 0 arithmetic right shift, < 0 left shift (by ACC_BITS gives 0). LUT: the lane's
// lookup-table entry for a (vdla_lut), sign-extended; b is ignored.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_alu_lane (
  input  vdla_pkg::alu_op_e   op,
  input  logic [ACC_BITS-1:0] a,
  input  logic [ACC_BITS-1:0] b,
  input  logic [TABLE_BITS-1:0] entry,
  output logic [ACC_BITS-1:0] y
);
  logic signed [ACC_BITS-1:0] sa, sb;
  logic [ALU_SHIFT_BITS-1:0] amount, left;
  logic [ACC_BITS-1:0] shifted;
  assign sa = a;
  assign sb = b;
  assign amount = b[ALU_SHIFT_BITS-1:0];
  assign left = '0 - amount;    // the most negative amount shifts left by 2^(ALU_SHIFT_BITS-1)
  assign shifted = amount[ALU_SHIFT_BITS-1] ? a << left : ACC_BITS'(sa >>> amount[ALU_SHIFT_BITS-2:0]);
  always_comb begin
    unique case (op)
      ALU_MIN: y = sa < sb ? a : b;
      ALU_MAX: y = sa > sb ? a : b;
      ALU_ADD, ALU_FLUSH: y = a + b;    // FLUSH: the value written back (vdla_alu zeroes the ACC write)
      ALU_SHR: y = shifted;
      ALU_MUL: y = a * b;
      ALU_LUT: y = ACC_BITS'($signed(entry));
      default: y = a;
    endcase
  end
endmodule
