// One 32-bit ALU lane (SPEC §3): MIN/MAX signed, ADD and MUL wrap (low 32 bits), SHR by the
// low 6 bits of b read as a signed number: >= 0 arithmetic right shift, < 0 left shift
// (by 32 gives 0).
module vdla_alu_lane (
  input  logic [2:0]  op,
  input  logic [31:0] a,
  input  logic [31:0] b,
  output logic [31:0] y
);
  localparam logic [2:0] MIN = 3'd0, MAX = 3'd1, ADD = 3'd2, SHR = 3'd3, MUL = 3'd4;
  logic signed [31:0] sa, sb;
  logic [5:0] amount, left;
  logic [31:0] shifted;
  assign sa = a;
  assign sb = b;
  assign amount = b[5:0];
  assign left = 6'd0 - amount;    // -32 -> 32
  assign shifted = amount[5] ? a << left : 32'(sa >>> amount[4:0]);
  always_comb begin
    unique case (op)
      MIN: y = sa < sb ? a : b;
      MAX: y = sa > sb ? a : b;
      ADD: y = a + b;
      SHR: y = shifted;
      MUL: y = a * b;
      default: y = a;
    endcase
  end
endmodule
