// The load DMA of the load and compute modules: a 2-D strided read from DRAM into one SRAM
// with zero padding (SPEC §3), timed exactly as timing.duration() says:
//   accept + (DMA_SETUP_CYCLES - 1) setup cycles,
//   one cycle per padding element (a zero element written),
//   per DRAM row: the AR cycle ... last beat = DRAM_READ_LATENCY + beats cycles.
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
  logic [31:0] setup_left, pad_left, next_row, ptr, row_addr, beat, ar_beats_left, ar_next_addr;

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

  logic beat_fire, ar_fire, read_last_beat, pad_last;
  assign axi_req.arvalid = state == S_READ && ar_beats_left != 0;
  assign ar_fire = axi_req.arvalid && axi_rsp.arready;
  assign axi_req.araddr = AXI_ADDR_BITS'(ar_next_addr);
  logic [31:0] ar_beats;
  vdla_burst_len u_ar_len (.addr(AXI_ADDR_BITS'(ar_next_addr)), .beats_left(ar_beats_left), .beats(ar_beats));
  assign axi_req.arlen = AXI_LEN_BITS'(ar_beats - 1);
  assign axi_req.rready = 1'b1;
  assign beat_fire = state == S_READ && axi_rsp.rvalid;
  assign read_last_beat = beat_fire && beat == row_beats - 1;
  assign pad_last = state == S_PAD && pad_left == 1;

  // a row starts after setup, after a padding row, after the x_pad_1 of a data row, or
  // after a data row's last beat when x_pad_1 = 0
  logic begin_row;
  always_comb begin
    begin_row = 1'b0;
    if (state == S_SETUP && setup_left == 0) begin_row = 1'b1;
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
    end else begin
      if (start) begin
        insn_q <= insn;
        ptr <= 32'(insn.sram_base);
        next_row <= '0;
        setup_left <= 32'(DMA_SETUP_CYCLES - 2);
        state <= S_SETUP;
      end
      if (state == S_SETUP) begin
        setup_left <= setup_left - 1;
        row_addr <= first_row_addr;
      end
      if (state == S_PAD) begin
        ptr <= ptr + 1;
        pad_left <= pad_left - 1;
        if (pad_last && pad_kind == PAD_PRE) begin
          state <= S_READ;
          beat <= '0;
          ar_beats_left <= row_beats;
          ar_next_addr <= row_addr;
        end
      end
      if (ar_fire) begin
        ar_beats_left <= ar_beats_left - ar_beats;
        ar_next_addr <= ar_next_addr + (ar_beats << LOG_BUS_BYTES);
      end
      if (beat_fire) beat <= beat + 1;
      if (read_last_beat) begin
        ptr <= ptr + x_size;
        row_addr <= row_addr + row_step;
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
          ar_beats_left <= row_beats;
          // the setup cycle latches row_addr in the same edge: use the first row's address
          ar_next_addr <= state == S_SETUP ? first_row_addr : row_addr_next;
        end
      end
    end
  end

  // row address of the row being started (a data row ending this cycle advances it)
  logic [31:0] row_addr_next;
  assign row_addr_next = read_last_beat ? row_addr + row_step : row_addr;

endmodule
