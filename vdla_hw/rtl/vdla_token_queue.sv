// A dependence-token queue. Tokens carry no data, so the queue is a counter. A push made
// in the last cycle of an instruction ending at e reaches the counter after DELAY more
// cycles, so a pop can see it from cycle e + DELAY (timing.py: token_delay).
module vdla_token_queue #(
  parameter int DEPTH,   // set by the instance (vdla_top: TOKEN_QUEUE_DEPTH, TOKEN_DELAY)
  parameter int DELAY
) (
  input  logic clk,
  input  logic rst,
  input  logic flush,
  input  logic push,
  input  logic pop,
  output logic avail,
  output logic empty,     // no token held (after this cycle's pop) or in flight
  output logic overflow   // pulse: a push arrived at a full queue
);
  localparam int CW = $clog2(DEPTH + 1);
  logic [CW-1:0] count;
  logic arrive;
  logic in_flight;

  generate
    if (DELAY == 0) begin : g_now
      assign arrive = push;
      assign in_flight = 1'b0;
    end else begin : g_line
      logic [DELAY-1:0] line;   // line[k]: a push made k + 1 cycles ago
      always_ff @(posedge clk) begin
        if (rst || flush) line <= '0;
        else line <= (line << 1) | DELAY'(push);
      end
      assign arrive = line[DELAY-1];
      assign in_flight = |line;
    end
  endgenerate

  assign avail = count != '0;
  assign empty = count == CW'(pop && avail) && !in_flight;
  assign overflow = arrive && count == CW'(DEPTH) && !(pop && avail);

  always_ff @(posedge clk) begin
    if (rst || flush) count <= '0;
    else count <= count + CW'(arrive && !overflow) - CW'(pop && avail);
  end
endmodule
