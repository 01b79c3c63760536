// Command queue between fetch and one module: a registered FIFO. `full` and `valid` depend
// only on registered state, so a slot freed by a pop in cycle t is usable by fetch in t+1
// and an entry pushed in cycle t is visible to the module in t+1 (timing.py's dispatch
// model with dispatch_delay = 1).
module vdla_cmd_fifo #(
  parameter int WIDTH,   // set by the instance (vdla_top: INSN_WIDTH, CMD_QUEUE_DEPTH)
  parameter int DEPTH
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

  logic [PW-1:0] rd_next, wr_next;
  assign rd_next = rd_ptr == PW'(DEPTH - 1) ? '0 : rd_ptr + 1'b1;
  assign wr_next = wr_ptr == PW'(DEPTH - 1) ? '0 : wr_ptr + 1'b1;

  always_ff @(posedge clk) begin
    if (push && !full) mem[wr_ptr] <= wdata;
    if (rst || flush) begin
      rd_ptr <= '0;
      wr_ptr <= '0;
      count <= '0;
    end else begin
      if (push && !full) wr_ptr <= wr_next;
      if (pop && valid) rd_ptr <= rd_next;
      count <= count + CW'(push && !full) - CW'(pop && valid);
    end
  end
endmodule
