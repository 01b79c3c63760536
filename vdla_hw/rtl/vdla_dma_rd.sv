// The load DMA of the load and compute modules: a 2-D strided read from DRAM into one SRAM
// with zero padding (SPEC §3), timed exactly as timing.duration() says. Two sides:
//   requests: from the first cycle after setup, every data row's bursts back to back, one
//     AR per cycle, whatever the SRAM side is doing (several bursts outstanding, as AXI
//     allows: the read latency is paid once per LOAD, not once per row);
//   SRAM side: accept + (DMA_SETUP_CYCLES - 1) setup cycles, then one cycle per padding
//     element (a zero element written) and one per data beat, in row order; RREADY is high
//     only while it takes a row's beats, so beats that arrive during padding wait.
// The owner routes element writes to its SRAMs: wr_elem is the element index (absolute,
// 32 bit so the owner can range-check it), wr_beat the beat within the element (within
// the row for micro-ops, whose bus words hold UOPS_PER_BEAT micro-ops each).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_dma_rd (
  input  logic                  clk,
  input  logic                  rst,
  input  logic                  start,      // the accept cycle of a LOAD with x_size != 0
  input  vdla_pkg::mem_insn_t   insn,       // the head, read in the start cycle
  output vdla_pkg::mem_insn_t   insn_q,     // the LOAD in flight (its owner routes writes by it)
  output logic                  busy,       // in a cycle after the accept cycle
  output logic                  last,       // the instruction's last busy cycle
  output logic                  wr_en,
  output logic                  wr_pad,
  output logic [31:0]           wr_elem,
  output logic [31:0]           wr_beat,
  output logic [BUS_BITS-1:0]   wr_data,
  output logic                  dram_error, // pulse: a beat came back with an error response
  output vdla_pkg::axi_rd_req_t axi_req,
  input  vdla_pkg::axi_rd_rsp_t axi_rsp
);
  typedef enum logic [1:0] {S_IDLE, S_SETUP, S_PAD, S_READ} state_t;
  typedef enum logic [1:0] {PAD_ROW, PAD_PRE, PAD_POST} pad_kind_t;

  state_t state;
  pad_kind_t pad_kind;
  logic [31:0] setup_left, pad_left, next_row, ptr, beat;
  logic [31:0] ar_rows_left, ar_row_addr, ar_beats_left, ar_next_addr;

  // ---- derived from the latched instruction ----------------------------------------------
  logic is_uop;
  logic [4:0] log_elem_bytes, log_beats;
  logic [31:0] rows_total, row_len, row_beats, first_row_addr, row_step, dram_base, x_size;
  logic [MEM_X_PAD_0_W-1:0] xp0;
  logic [MEM_X_PAD_1_W-1:0] xp1;
  assign dram_base = 32'(insn_q.dram_base);
  assign x_size = 32'(insn_q.x_size);
  always_comb begin
    is_uop = insn_q.memory_type == MEM_UOP;
    unique case (insn_q.memory_type)
      MEM_INP: begin log_elem_bytes = 5'(LOG_INP_ELEM_BYTES); log_beats = 5'(LOG_INP_BEATS); end
      MEM_WGT: begin log_elem_bytes = 5'(LOG_WGT_ELEM_BYTES); log_beats = 5'(LOG_WGT_BEATS); end
      MEM_ACC: begin log_elem_bytes = 5'(LOG_ACC_ELEM_BYTES); log_beats = 5'(LOG_ACC_BEATS); end
      MEM_ACC_8BIT: begin log_elem_bytes = 5'(LOG_ACC8_ELEM_BYTES); log_beats = 5'(LOG_ACC8_BEATS); end
      MEM_LUT: begin log_elem_bytes = 5'(LOG_LUT_ELEM_BYTES); log_beats = 5'(LOG_LUT_BEATS); end
      default: begin log_elem_bytes = 5'(LOG_UOP_BYTES); log_beats = 5'd0; end  // UOP: micro-op units
    endcase
    // micro-op loads are one row, never padded; their first word may sit mid-beat
    xp0 = is_uop ? '0 : insn_q.x_pad_0;
    xp1 = is_uop ? '0 : insn_q.x_pad_1;
    rows_total = is_uop ? 32'd1 : 32'(insn_q.y_pad_0) + 32'(insn_q.y_size) + 32'(insn_q.y_pad_1);
    row_len = 32'(xp0) + x_size + 32'(xp1);
    if (is_uop) begin
      row_beats = (((dram_base << LOG_UOP_BYTES) & 32'(BUS_BYTES - 1)) + (x_size << LOG_UOP_BYTES)
                   + 32'(BUS_BYTES - 1)) >> LOG_BUS_BYTES;
      // the parentheses matter: Yosys 0.70 reads ~32'(x) as a cast to ~32 bits and drops
      // the ~ (README, Yosys pitfalls)
      first_row_addr = (dram_base << LOG_UOP_BYTES) & ~(32'(BUS_BYTES - 1));
    end else begin
      row_beats = x_size << log_beats;
      first_row_addr = dram_base << log_elem_bytes;
    end
    row_step = 32'(insn_q.x_stride) << log_elem_bytes;
  end

  // ---- what starting row `next_row` means --------------------------------------------------
  logic sr_done, sr_pad_row;
  assign sr_done = next_row == rows_total;
  assign sr_pad_row = !is_uop && (next_row < 32'(insn_q.y_pad_0)
                                   || next_row >= 32'(insn_q.y_pad_0) + 32'(insn_q.y_size));

  logic setup_end;
  assign setup_end = state == S_SETUP && setup_left == 0;

  // ---- requests: the data rows' bursts, one AR per cycle from the cycle after setup ---------
  // ar_beats_left is zero outside an instruction's request phase (reset, and counted down
  // to zero before the last beat can arrive), so AR never fires for a finished LOAD
  logic [31:0] data_rows, ar_beats;
  logic ar_fire, ar_row_done;
  assign data_rows = is_uop ? 32'd1 : 32'(insn_q.y_size);
  assign axi_req.arvalid = ar_beats_left != 0;
  assign ar_fire = axi_req.arvalid && axi_rsp.arready;
  assign axi_req.araddr = AXI_ADDR_BITS'(ar_next_addr);
  vdla_burst_len u_ar_len (.addr(AXI_ADDR_BITS'(ar_next_addr)), .beats_left(ar_beats_left), .beats(ar_beats));
  assign axi_req.arlen = AXI_LEN_BITS'(ar_beats - 1);
  assign ar_row_done = ar_fire && ar_beats == ar_beats_left;

  // ---- SRAM side ------------------------------------------------------------------------
  logic beat_fire, read_last_beat, pad_last;
  assign axi_req.rready = state == S_READ;
  assign beat_fire = state == S_READ && axi_rsp.rvalid;
  assign read_last_beat = beat_fire && beat == row_beats - 1;
  assign pad_last = state == S_PAD && pad_left == 1;

  // a row starts after setup, after a padding row, after the x_pad_1 of a data row, or
  // after a data row's last beat when x_pad_1 = 0
  logic begin_row;
  always_comb begin
    begin_row = 1'b0;
    if (setup_end) begin_row = 1'b1;
    if (pad_last && pad_kind != PAD_PRE) begin_row = 1'b1;
    if (read_last_beat && xp1 == 0) begin_row = 1'b1;
  end
  assign last = begin_row && sr_done;
  assign busy = state != S_IDLE;

  always_comb begin
    wr_en = 1'b0;
    wr_pad = 1'b0;
    wr_elem = ptr;
    wr_beat = 32'd0;
    wr_data = axi_rsp.rdata;
    if (state == S_PAD) begin
      wr_en = 1'b1;
      wr_pad = 1'b1;
    end else if (beat_fire) begin
      wr_en = 1'b1;
      if (is_uop) wr_beat = beat;
      else begin
        wr_elem = ptr + (beat >> log_beats);
        wr_beat = beat & ((32'd1 << log_beats) - 1);
      end
    end
  end
  assign dram_error = beat_fire && axi_rsp.rresp != AXI_RESP_OKAY;

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
      ar_beats_left <= '0;
    end else begin
      if (start) begin
        insn_q <= insn;
        ptr <= 32'(insn.sram_base);
        next_row <= '0;
        setup_left <= 32'(DMA_SETUP_CYCLES - 2);
        state <= S_SETUP;
      end
      if (state == S_SETUP) setup_left <= setup_left - 1;
      if (setup_end) begin
        ar_rows_left <= data_rows == 0 ? '0 : data_rows - 1;
        ar_row_addr <= first_row_addr;
        ar_next_addr <= first_row_addr;
        ar_beats_left <= data_rows == 0 ? '0 : row_beats;
      end else if (ar_row_done && ar_rows_left != 0) begin
        ar_rows_left <= ar_rows_left - 1;
        ar_row_addr <= ar_row_addr + row_step;
        ar_next_addr <= ar_row_addr + row_step;
        ar_beats_left <= row_beats;
      end else if (ar_fire) begin
        ar_beats_left <= ar_beats_left - ar_beats;
        ar_next_addr <= ar_next_addr + (ar_beats << LOG_BUS_BYTES);
      end
      if (state == S_PAD) begin
        ptr <= ptr + 1;
        pad_left <= pad_left - 1;
        if (pad_last && pad_kind == PAD_PRE) begin
          state <= S_READ;
          beat <= '0;
        end
      end
      if (beat_fire) beat <= beat + 1;
      if (read_last_beat) begin
        ptr <= ptr + x_size;
        if (xp1 != 0) begin
          state <= S_PAD;
          pad_kind <= PAD_POST;
          pad_left <= 32'(xp1);
        end
      end
      if (begin_row) begin
        next_row <= next_row + 1;
        if (sr_done) state <= S_IDLE;
        else if (sr_pad_row) begin
          state <= S_PAD;
          pad_kind <= PAD_ROW;
          pad_left <= row_len;
        end else if (xp0 != 0) begin
          state <= S_PAD;
          pad_kind <= PAD_PRE;
          pad_left <= 32'(xp0);
        end else begin
          state <= S_READ;
          beat <= '0;
        end
      end
    end
  end

endmodule
