// The store DMA: per row y, x_size OUT elements from OUT[sram_base + y*x_size ...] to DRAM
// at (dram_base + y*x_stride) * OUT element bytes, timed as timing.duration() says:
//   accept + (DMA_SETUP_CYCLES - 1) setup cycles (the last one reads the first element),
//   then every row's W beats back to back (AW with or before the first beat of its burst;
//   several bursts outstanding, as AXI allows), and DRAM_WRITE_LATENCY cycles until the
//   write response of the last burst: the write latency is paid once per STORE.
// The OUT read port is registered, so the element a beat needs is read the cycle before.
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_dma_wr (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     start,      // the accept cycle of a STORE with x_size != 0
  /* verilator lint_off UNUSEDSIGNAL */  // only the fields a store reads
  input  vdla_pkg::mem_insn_t      insn,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                     busy,
  output logic                     last,
  output logic                     range_error, // pulse: an OUT index past the depth
  output logic                     dram_error,  // pulse: an error write response
  output logic                     out_re,
  output logic [LOG_ACC_DEPTH-1:0] out_raddr,
  input  logic [OUT_ELEM_BITS-1:0] out_rdata,
  output vdla_pkg::axi_wr_req_t    axi_req,
  input  vdla_pkg::axi_wr_rsp_t    axi_rsp
);
  typedef enum logic [1:0] {S_IDLE, S_SETUP, S_WRITE, S_WRESP} state_t;
  state_t state;
  logic [MEM_Y_SIZE_W-1:0] y_size;
  logic [MEM_X_SIZE_W-1:0] x_size;
  logic [MEM_X_STRIDE_W-1:0] x_stride;
  logic [MEM_DRAM_BASE_W-1:0] dram_base;
  logic [31:0] setup_left, row, ptr, beat, bursts, b_seen;
  logic [31:0] aw_rows_left, aw_row_addr, aw_beats_left, aw_next_addr;
  logic [31:0] row_beats, row_step, base_addr, w_addr, w_row_addr, w_burst_left;

  assign row_beats = 32'(x_size) << LOG_OUT_BEATS;
  assign row_step = 32'(x_stride) << LOG_OUT_ELEM_BYTES;
  assign base_addr = 32'(dram_base) << LOG_OUT_ELEM_BYTES;
  assign busy = state != S_IDLE;

  logic setup_end;
  assign setup_end = state == S_SETUP && setup_left == 0;

  // ---- AW: every row's bursts, one per cycle from the first W cycle; a burst's AW never
  // comes after its first W beat (each burst has at least one beat). aw_beats_left is zero
  // outside an instruction's request phase, so AW never fires for a finished STORE.
  logic aw_fire, aw_row_done;
  logic [31:0] aw_beats;
  vdla_burst_len u_aw_len (.addr(AXI_ADDR_BITS'(aw_next_addr)), .beats_left(aw_beats_left), .beats(aw_beats));
  assign axi_req.awvalid = aw_beats_left != 0;
  assign axi_req.awaddr = AXI_ADDR_BITS'(aw_next_addr);
  assign axi_req.awlen = AXI_LEN_BITS'(aw_beats - 1);
  assign aw_fire = axi_req.awvalid && axi_rsp.awready;
  assign aw_row_done = aw_fire && aw_beats == aw_beats_left;

  // ---- W: beat `beat` of the row is lane (beat mod OUT_BEATS) of the element read last
  logic w_fire, lane_last, row_sent, all_sent, b_fire, prefetch;
  logic [31:0] lane;
  assign lane = beat & 32'(OUT_BEATS - 1);
  assign axi_req.wvalid = state == S_WRITE;
  assign w_fire = axi_req.wvalid && axi_rsp.wready;
  assign axi_req.wdata = out_rdata[lane * BUS_BITS +: BUS_BITS];
  assign axi_req.wstrb = '1;   // whole bus words
  // the W side splits each row into the same bursts as the AW side, in order
  logic [31:0] w_burst;
  vdla_burst_len u_w_len (.addr(AXI_ADDR_BITS'(w_addr)), .beats_left(row_beats - beat), .beats(w_burst));
  assign axi_req.wlast = w_burst_left == 0 ? w_burst == 1 : w_burst_left == 1;
  assign lane_last = lane == 32'(OUT_BEATS - 1);
  assign row_sent = w_fire && beat == row_beats - 1;
  assign all_sent = row_sent && row + 1 == 32'(y_size);

  // ---- B: one response per burst; the last one (DRAM_WRITE_LATENCY >= 1 cycles after the
  // last beat, so in S_WRESP) ends the STORE
  assign axi_req.bready = 1'b1;
  assign b_fire = axi_rsp.bvalid && (state == S_WRITE || state == S_WRESP);
  assign dram_error = b_fire && axi_rsp.bresp != AXI_RESP_OKAY;
  assign last = (setup_end && y_size == 0) || (state == S_WRESP && b_fire && b_seen + 1 == bursts);

  // read the element the next beat needs, the cycle before: OUT holds the rows back to back
  assign prefetch = (setup_end && y_size != 0) || (w_fire && lane_last && !all_sent);
  assign out_re = prefetch && ptr < 32'(OUT_DEPTH);
  assign out_raddr = ptr[LOG_ACC_DEPTH-1:0];
  assign range_error = prefetch && ptr >= 32'(OUT_DEPTH);

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
      aw_beats_left <= '0;
    end else begin
      if (start) begin
        dram_base <= insn.dram_base;
        y_size <= insn.y_size;
        x_size <= insn.x_size;
        x_stride <= insn.x_stride;
        ptr <= 32'(insn.sram_base);
        setup_left <= 32'(DMA_SETUP_CYCLES - 2);
        state <= S_SETUP;
      end
      if (state == S_SETUP) setup_left <= setup_left - 1;
      if (setup_end) begin
        state <= y_size == 0 ? S_IDLE : S_WRITE;
        row <= '0;
        beat <= '0;
        bursts <= '0;
        b_seen <= '0;
        w_burst_left <= '0;
        w_addr <= base_addr;
        w_row_addr <= base_addr;
        aw_rows_left <= y_size == 0 ? '0 : 32'(y_size) - 1;
        aw_row_addr <= base_addr;
        aw_next_addr <= base_addr;
        aw_beats_left <= y_size == 0 ? '0 : row_beats;
      end
      if (prefetch) ptr <= ptr + 1;
      if (b_fire) b_seen <= b_seen + 1;
      if (aw_fire) bursts <= bursts + 1;
      if (aw_row_done && aw_rows_left != 0) begin
        aw_rows_left <= aw_rows_left - 1;
        aw_row_addr <= aw_row_addr + row_step;
        aw_next_addr <= aw_row_addr + row_step;
        aw_beats_left <= row_beats;
      end else if (aw_fire) begin
        aw_beats_left <= aw_beats_left - aw_beats;
        aw_next_addr <= aw_next_addr + (aw_beats << LOG_BUS_BYTES);
      end
      if (w_fire) begin
        w_burst_left <= (w_burst_left == 0 ? w_burst : w_burst_left) - 1;
        if (row_sent) begin
          beat <= '0;
          row <= row + 1;
          w_row_addr <= w_row_addr + row_step;
          w_addr <= w_row_addr + row_step;
        end else begin
          beat <= beat + 1;
          w_addr <= w_addr + 32'(BUS_BYTES);
        end
      end
      if (all_sent) state <= S_WRESP;
      if (last) state <= S_IDLE;
    end
  end
endmodule
