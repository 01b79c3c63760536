// The AXI-lite control block (SPEC §5); offsets come from vdla.hw.regmap via vdla_pkg.
// Writing CONTROL.start while idle launches: the write's cycle is the last before cycle 0,
// fetch requests its first burst in cycle 0, and CYCLES counts up to the end of FINISH.
// Writes take whole 32-bit words (wstrb is ignored).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_ctrl (
  input  logic                     clk,
  input  logic                     rst,
  input  logic                     s_awvalid,
  output logic                     s_awready,
  input  logic [REG_ADDR_BITS-1:0] s_awaddr,
  input  logic                     s_wvalid,
  output logic                     s_wready,
  input  logic [31:0]              s_wdata,
  input  logic [3:0]               s_wstrb,
  output logic                     s_bvalid,
  input  logic                     s_bready,
  output logic [1:0]               s_bresp,
  input  logic                     s_arvalid,
  output logic                     s_arready,
  input  logic [REG_ADDR_BITS-1:0] s_araddr,
  output logic                     s_rvalid,
  input  logic                     s_rready,
  output logic [31:0]              s_rdata,
  output logic [1:0]               s_rresp,
  output logic                     launch,
  output logic                     running,
  output logic                     done,
  output logic [31:0]              insn_addr,
  output logic [31:0]              insn_count,
  input  logic                     finish_done,
  input  logic [5:0]               err_set,
  input  logic [NUM_COUNTERS*32-1:0] counters   // regmap.COUNTERS order, 32 bit each
);
  logic [31:0] cycles;
  logic [5:0] err_cause;
  logic wr;
  assign wr = s_awvalid && s_wvalid && !s_bvalid;
  assign s_awready = wr;
  assign s_wready = wr;
  assign s_bresp = 2'b00;
  assign launch = wr && s_awaddr == REG_CONTROL && s_wdata[0] && !running;

  always_ff @(posedge clk) begin
    if (rst) begin
      s_bvalid <= 1'b0;
      running <= 1'b0;
      done <= 1'b0;
      err_cause <= '0;
      cycles <= '0;
      insn_addr <= '0;
      insn_count <= '0;
    end else begin
      if (wr) begin
        s_bvalid <= 1'b1;
        if (s_awaddr == REG_INSN_ADDR) insn_addr <= s_wdata;
        if (s_awaddr == REG_INSN_COUNT) insn_count <= s_wdata;
      end else if (s_bready) s_bvalid <= 1'b0;
      if (launch) begin
        running <= 1'b1;
        done <= 1'b0;
        err_cause <= '0;
        cycles <= '0;
      end else begin
        if (running) begin
          cycles <= cycles + 1;
          err_cause <= err_cause | err_set;
        end
        if (running && finish_done) begin
          running <= 1'b0;
          done <= 1'b1;
        end
      end
    end
  end

  logic [31:0] rd;
  always_comb begin
    unique case (s_araddr)
      REG_CONTROL: rd = {28'd0, running, err_cause != 0, done, 1'b0};
      REG_HW_ID: rd = HW_ID;
      REG_INSN_ADDR: rd = insn_addr;
      REG_INSN_COUNT: rd = insn_count;
      REG_CYCLES: rd = cycles;
      REG_ERROR_CAUSE: rd = 32'(err_cause);
      default: begin
        // counter k sits at BUSY_LOAD + 4k
        logic [REG_ADDR_BITS-1:0] k;
        k = (s_araddr - REG_BUSY_LOAD) >> 2;
        rd = s_araddr >= REG_BUSY_LOAD && k < REG_ADDR_BITS'(NUM_COUNTERS) && s_araddr[1:0] == 2'b00
             ? counters[32*k +: 32] : 32'd0;
      end
    endcase
  end

  always_ff @(posedge clk) begin
    if (rst) s_rvalid <= 1'b0;
    else if (s_arvalid && !s_rvalid) begin
      s_rvalid <= 1'b1;
      s_rdata <= rd;
    end else if (s_rready) s_rvalid <= 1'b0;
  end
  assign s_arready = !s_rvalid;
  assign s_rresp = 2'b00;

  logic unused;
  assign unused = ^s_wstrb;
endmodule
