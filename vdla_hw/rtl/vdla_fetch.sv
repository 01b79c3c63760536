// fetch: reads the instruction stream in bursts of FETCH_BURST_INSNS and dispatches one
// instruction per cycle into the command queue of its module (SPEC §4 routing). A burst
// requested in cycle r has all its beats by r + DRAM_READ_LATENCY + beats; dispatching
// starts then, stalls while the target queue is full, and the next burst is requested the
// cycle after the burst's last dispatch (timing.py's fetch model).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_fetch (
  input  logic                  clk,
  input  logic                  rst,
  input  logic                  launch,
  input  logic                  halt,        // done: stop fetching
  input  logic [REG_BITS-1:0]   insn_addr,
  input  logic [REG_BITS-1:0]   insn_count,
  output logic [ERR_W-1:0]      err,         // ERROR_CAUSE bits raised this cycle
  // dispatch into the three command queues
  output vdla_pkg::insn_t       disp_insn,
  output logic                  disp_load,
  output logic                  disp_compute,
  output logic                  disp_store,
  input  logic                  full_load,
  input  logic                  full_compute,
  input  logic                  full_store,
  output vdla_pkg::axi_rd_req_t axi_req,
  input  vdla_pkg::axi_rd_rsp_t axi_rsp
);
  localparam int KW = FETCH_BURST_INSNS > 1 ? $clog2(FETCH_BURST_INSNS) : 1;
  // F_WAIT: the burst's AXI requests go out (from its first cycle; more than one only at a
  // 4 KiB boundary) and its beats come in; F_DISP: dispatch from the burst buffer
  typedef enum logic [1:0] {F_IDLE, F_WAIT, F_DISP} state_t;
  state_t state;
  // plain words: Yosys 0.70 mis-elaborates a part-select write into an array of packed structs
  logic [INSN_WIDTH-1:0] burst_buf [FETCH_BURST_INSNS];
  logic [31:0] base, count, fetched, beat, burst_beats, ar_left, ar_next;
  logic [KW-1:0] k;

  // the next burst, set up in the cycle that ends the previous one (or at launch)
  logic [31:0] next_fetched, next_left, next_insns;
  assign next_fetched = launch ? 32'd0 : fetched + 1;
  assign next_left = (launch ? insn_count : count) - next_fetched;
  assign next_insns = next_left > 32'(FETCH_BURST_INSNS) ? 32'(FETCH_BURST_INSNS) : next_left;

  logic [31:0] ar_beats;
  vdla_burst_len u_len (.addr(AXI_ADDR_BITS'(ar_next)), .beats_left(ar_left), .beats(ar_beats));
  assign axi_req.arvalid = state == F_WAIT && ar_left != 0;
  assign axi_req.araddr = AXI_ADDR_BITS'(ar_next);
  assign axi_req.arlen = AXI_LEN_BITS'(ar_beats - 1);
  assign axi_req.rready = 1'b1;
  always_comb begin
    err = '0;
    err[ERR_DRAM_BIT] = state == F_WAIT && axi_rsp.rvalid && axi_rsp.rresp != AXI_RESP_OKAY;
  end

  // ---- routing (SPEC §4) -----------------------------------------------------------------
  logic to_load, to_store, to_compute, blocked, disp;
  assign disp_insn = burst_buf[k];
  assign to_store = disp_insn.hdr.opcode == OP_STORE;
  assign to_load = disp_insn.hdr.opcode == OP_LOAD
                   && (disp_insn.mem.memory_type == MEM_INP || disp_insn.mem.memory_type == MEM_WGT);
  assign to_compute = !to_store && !to_load;
  assign blocked = (to_load && full_load) || (to_store && full_store) || (to_compute && full_compute);
  assign disp = state == F_DISP && !blocked;
  assign disp_load = disp && to_load;
  assign disp_store = disp && to_store;
  assign disp_compute = disp && to_compute;

  always_ff @(posedge clk) begin
    if (state == F_WAIT && axi_rsp.rvalid)
      burst_buf[beat >> LOG_INSN_BEATS][(beat & 32'(INSN_BEATS - 1)) * BUS_BITS +: BUS_BITS] <= axi_rsp.rdata;
    if (rst || halt) begin
      state <= F_IDLE;
    end else begin
      logic start_burst;
      start_burst = launch;
      if (launch) begin
        base <= insn_addr;
        count <= insn_count;
        fetched <= '0;
      end
      unique case (state)
        F_WAIT: begin
          if (axi_req.arvalid && axi_rsp.arready) begin
            ar_left <= ar_left - ar_beats;
            ar_next <= ar_next + (ar_beats << LOG_BUS_BYTES);
          end
          if (axi_rsp.rvalid) begin
            beat <= beat + 1;
            if (beat == burst_beats - 1) begin
              state <= F_DISP;
              k <= '0;
            end
          end
        end
        F_DISP: if (disp) begin
          k <= k + 1'b1;
          fetched <= fetched + 1;
          if (32'(k) == (burst_beats >> LOG_INSN_BEATS) - 1) begin
            if (fetched + 1 == count) state <= F_IDLE;
            else start_burst = 1'b1;
          end
        end
        default: ;
      endcase
      if (start_burst) begin
        if (next_left == 0) state <= F_IDLE;
        else begin
          state <= F_WAIT;
          beat <= '0;
          burst_beats <= next_insns << LOG_INSN_BEATS;
          ar_left <= next_insns << LOG_INSN_BEATS;
          ar_next <= (launch ? insn_addr : base) + (next_fetched << LOG_INSN_BYTES);
        end
      end
    end
  end
endmodule
