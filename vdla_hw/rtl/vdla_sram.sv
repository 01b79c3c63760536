// One SRAM: one write port with a write enable per bank (a bank is WIDTH/BANKS bits, so a
// DMA beat can fill part of an element) and one registered read port (read-first).
module vdla_sram #(
  parameter int WIDTH = 64,
  parameter int DEPTH = 16,
  parameter int BANKS = 1,
  localparam int AW = DEPTH > 1 ? $clog2(DEPTH) : 1
) (
  input  logic             clk,
  input  logic             clear,   // simulation only: zero the contents (see README)
  input  logic             we,
  input  logic [BANKS-1:0] wbe,
  input  logic [AW-1:0]    waddr,
  input  logic [WIDTH-1:0] wdata,
  input  logic             re,
  input  logic [AW-1:0]    raddr,
  output logic [WIDTH-1:0] rdata
);
  localparam int BW = WIDTH / BANKS;
  logic [WIDTH-1:0] mem [DEPTH];

  always_ff @(posedge clk) begin
    for (int b = 0; b < BANKS; b++)
      if (we && wbe[b]) mem[waddr][b*BW +: BW] <= wdata[b*BW +: BW];
    if (re) rdata <= mem[raddr];
`ifndef SYNTHESIS
    // Testbenches start every launch from zeroed SRAMs, like the simulator does.
    if (clear) for (int i = 0; i < DEPTH; i++) mem[i] <= '0;
`endif
  end
`ifdef SYNTHESIS
  logic unused_clear;
  assign unused_clear = clear;
`endif
endmodule
