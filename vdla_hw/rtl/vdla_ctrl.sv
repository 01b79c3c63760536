// The AXI-lite control block (SPEC §5); offsets come from vdla.hw.regmap via vdla_pkg.
// Writing CONTROL.start while idle launches: the write's cycle is the last before cycle 0,
// fetch requests its first burst in cycle 0, and CYCLES counts up to the end of FINISH.
// Writes take whole REG_BITS words (wstrb is not part of the bundle).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_ctrl (
  input  logic                   clk,
  input  logic                   rst,
  input  vdla_pkg::axil_req_t    s_req,
  output vdla_pkg::axil_rsp_t    s_rsp,
  output logic                   launch,
  output logic                   running,
  output logic                   done,
  output logic [REG_BITS-1:0]    insn_addr,
  output logic [REG_BITS-1:0]    insn_count,
  input  logic                   finish_done,
  input  logic [ERR_W-1:0]       err_set,
  input  logic [NUM_COUNTERS-1:0][REG_BITS-1:0] counters   // counter CNT_<name> = regmap.COUNTERS
);
  logic [REG_BITS-1:0] cycles;
  logic [ERR_W-1:0] err_cause;
  logic wr, bvalid, rvalid;
  logic [REG_BITS-1:0] rdata;
  assign wr = s_req.awvalid && s_req.wvalid && !bvalid;
  assign s_rsp.awready = wr;
  assign s_rsp.wready = wr;
  assign s_rsp.bvalid = bvalid;
  assign s_rsp.bresp = AXI_RESP_OKAY;
  assign launch = wr && s_req.awaddr == REG_CONTROL && s_req.wdata[CTRL_START_BIT] && !running;

  always_ff @(posedge clk) begin
    if (rst) begin
      bvalid <= 1'b0;
      running <= 1'b0;
      done <= 1'b0;
      err_cause <= '0;
      cycles <= '0;
      insn_addr <= '0;
      insn_count <= '0;
    end else begin
      if (wr) begin
        bvalid <= 1'b1;
        if (s_req.awaddr == REG_INSN_ADDR) insn_addr <= s_req.wdata;
        if (s_req.awaddr == REG_INSN_COUNT) insn_count <= s_req.wdata;
      end else if (s_req.bready) bvalid <= 1'b0;
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

  logic [REG_BITS-1:0] rd, control;
  always_comb begin
    control = '0;   // CONTROL.start reads 0
    control[CTRL_DONE_BIT] = done;
    control[CTRL_ERROR_BIT] = err_cause != '0;
    control[CTRL_RUNNING_BIT] = running;
  end
  always_comb begin
    unique case (s_req.araddr)
      REG_CONTROL: rd = control;
      REG_HW_ID: rd = HW_ID;
      REG_INSN_ADDR: rd = insn_addr;
      REG_INSN_COUNT: rd = insn_count;
      REG_CYCLES: rd = cycles;
      REG_ERROR_CAUSE: rd = REG_BITS'(err_cause);
      default: begin
        // counter k sits at BUSY_LOAD + REG_BYTES * k
        logic [REG_ADDR_BITS-1:0] k;
        k = (s_req.araddr - REG_BUSY_LOAD) >> LOG_REG_BYTES;
        rd = s_req.araddr >= REG_BUSY_LOAD && k < REG_ADDR_BITS'(NUM_COUNTERS)
             && s_req.araddr[LOG_REG_BYTES-1:0] == '0 ? counters[k] : '0;
      end
    endcase
  end

  always_ff @(posedge clk) begin
    if (rst) rvalid <= 1'b0;
    else if (s_req.arvalid && !rvalid) begin
      rvalid <= 1'b1;
      rdata <= rd;
    end else if (s_req.rready) rvalid <= 1'b0;
  end
  assign s_rsp.arready = !rvalid;
  assign s_rsp.rvalid = rvalid;
  assign s_rsp.rdata = rdata;
  assign s_rsp.rresp = AXI_RESP_OKAY;
endmodule
