// Command queue between fetch and one module: a registered FIFO. `full` and `valid` depend
// only on registered state, so a slot freed by a pop in cycle t is usable by fetch in t+1
// and an entry pushed in cycle t is visible to the module in t+1 (timing.py's dispatch
// model with dispatch_delay = 1).
module vdla_cmd_fifo #(
  parameter int WIDTH = 128,
  parameter int DEPTH = 32
) (
  input  logic             clk,
  input  logic             rst,
  input  logic             flush,
  input  logic             push,
  input  logic [WIDTH-1:0] wdata,
  output logic             full,
  input  logic             pop,
  output logic             valid,
  output logic [WIDTH-1:0] rdata
);
  localparam int PW = DEPTH > 1 ? $clog2(DEPTH) : 1;
  localparam int CW = $clog2(DEPTH + 1);
  logic [WIDTH-1:0] mem [DEPTH];
  logic [PW-1:0] rd_ptr, wr_ptr;
  logic [CW-1:0] count;

  assign full = count == CW'(DEPTH);
  assign valid = count != '0;
  assign rdata = mem[rd_ptr];

  function automatic logic [PW-1:0] next_ptr(input logic [PW-1:0] p);
    return p == PW'(DEPTH - 1) ? '0 : p + 1'b1;
  endfunction

  always_ff @(posedge clk) begin
    if (push && !full) mem[wr_ptr] <= wdata;
    if (rst || flush) begin
      rd_ptr <= '0;
      wr_ptr <= '0;
      count <= '0;
    end else begin
      if (push && !full) wr_ptr <= next_ptr(wr_ptr);
      if (pop && valid) rd_ptr <= next_ptr(rd_ptr);
      count <= count + CW'(push && !full) - CW'(pop && valid);
    end
  end
endmodule
