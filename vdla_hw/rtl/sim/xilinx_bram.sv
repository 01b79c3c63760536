// Behaviour of the Xilinx 7-series block RAMs (RAMB36E1, RAMB18E1) for simulating a Yosys
// netlist (vdla.hw.rtl.sim.netlist). Yosys's own models (share/xilinx/cells_sim.v) declare
// these two primitives with timing only: their outputs are never driven. netlist.py keeps
// their port and parameter lists and puts an instance of this module in their body.
//
// What is modelled: what synth_xilinx's block-RAM mapping uses (netlist.py refuses a netlist
// that uses more, naming the instance): true dual port (TDP) with each port 9, 18 or 36 bits
// wide (0: unused), simple dual port (SDP: port A reads, port B writes, both halves of the
// pins form one word of 72 or 36 bits), no output register (DO*_REG = 0), READ_FIRST on a
// port that reads and writes, the output resets (RSTRAM*) tied off. The memory is 9-bit
// bytes (8 data bits and their parity bit), laid out as the primitive does: a port of N
// bytes addresses its word by ADDR[top:3 + log2 N] and its byte k holds DI[8k+7:8k] and
// DIP[k]. Contents start at zero like the simulator's SRAMs (the RTL declares no initial
// values; netlist.py refuses INIT values other than 0 or x). Two ports writing one byte in
// one cycle: the last always block wins (the primitive's result is undefined; the VDLA SRAMs
// write through one port).
module vdla_model_bram #(
  parameter integer BYTES = 4096,        // 4096: RAMB36E1, 2048: RAMB18E1
  parameter integer PIN_BYTES = 4,       // bytes on DIADI / DIBDI ...: 4 (36E1), 2 (18E1)
  parameter integer ADDR_BITS = 16,
  parameter RAM_MODE = "TDP",
  parameter integer READ_WIDTH_A = 0,
  parameter integer READ_WIDTH_B = 0,
  parameter integer WRITE_WIDTH_A = 0,
  parameter integer WRITE_WIDTH_B = 0
) (
  input                        CLKARDCLK, CLKBWRCLK, ENARDEN, ENBWREN,
  input  [ADDR_BITS-1:0]       ADDRARDADDR, ADDRBWRADDR,
  input  [8*PIN_BYTES-1:0]     DIADI, DIBDI,
  input  [PIN_BYTES-1:0]       DIPADIP, DIPBDIP, WEA,
  input  [2*PIN_BYTES-1:0]     WEBWE,
  output [8*PIN_BYTES-1:0]     DOADO, DOBDO,
  output [PIN_BYTES-1:0]       DOPADOP, DOPBDOP
);
  localparam SDP = RAM_MODE == "SDP";
  localparam integer LOG_BYTES = BYTES == 4096 ? 12 : 11;
  // bytes per port access; in SDP port A reads the whole word and port B writes it
  localparam integer RD_A = READ_WIDTH_A / 9, WR_A = SDP ? 0 : WRITE_WIDTH_A / 9;
  localparam integer RD_B = SDP ? 0 : READ_WIDTH_B / 9, WR_B = WRITE_WIDTH_B / 9;

  reg [8:0] mem [0:BYTES-1];
  reg [9*2*PIN_BYTES-1:0] q_a, q_b;
  wire [9*2*PIN_BYTES-1:0] d_a, d_b;
  wire [2*PIN_BYTES-1:0] we_a, we_b;
  integer k;
  initial begin
    for (k = 0; k < BYTES; k = k + 1) mem[k] = 9'd0;
    q_a = 0;
    q_b = 0;
  end

  // byte k of a port's data: {DIP[k], DI[8k+7:8k]}; in SDP the B pins carry the upper half
  genvar g;
  generate
    for (g = 0; g < 2 * PIN_BYTES; g = g + 1) begin : g_byte
      if (g < PIN_BYTES) begin : g_low
        assign d_a[9*g +: 9] = {DIPADIP[g], DIADI[8*g +: 8]};
        assign d_b[9*g +: 9] = SDP ? {DIPADIP[g], DIADI[8*g +: 8]} : {DIPBDIP[g], DIBDI[8*g +: 8]};
        assign we_a[g] = WEA[WR_A == 1 ? 0 : g];
        assign we_b[g] = WEBWE[WR_B == 1 ? 0 : g];
      end else begin : g_high
        assign d_a[9*g +: 9] = 9'd0;
        assign d_b[9*g +: 9] = {DIPBDIP[g - PIN_BYTES], DIBDI[8*(g - PIN_BYTES) +: 8]};
        assign we_a[g] = 1'b0;
        assign we_b[g] = WEBWE[g];
      end
    end
    for (g = 0; g < PIN_BYTES; g = g + 1) begin : g_out
      assign DOADO[8*g +: 8] = q_a[9*g +: 8];
      assign DOPADOP[g] = q_a[9*g + 8];
      assign DOBDO[8*g +: 8] = SDP ? q_a[9*(g + PIN_BYTES) +: 8] : q_b[9*g +: 8];
      assign DOPBDOP[g] = SDP ? q_a[9*(g + PIN_BYTES) + 8] : q_b[9*g + 8];
    end
  endgenerate

  // the first byte of a port's word: the byte address with the bits below the word cleared
  function automatic [LOG_BYTES-1:0] first_byte(input [ADDR_BITS-1:0] addr, input integer bytes);
    first_byte = addr[3 +: LOG_BYTES] & ~(bytes - 1);
  endfunction

  // nonblocking writes: a read in the same edge (either port) sees the old byte (READ_FIRST)
  always @(posedge CLKARDCLK) if (ENARDEN) begin
    for (k = 0; k < WR_A; k = k + 1)
      if (we_a[k]) mem[first_byte(ADDRARDADDR, WR_A) + k] <= d_a[9*k +: 9];
    for (k = 0; k < RD_A; k = k + 1) q_a[9*k +: 9] <= mem[first_byte(ADDRARDADDR, RD_A) + k];
  end
  always @(posedge CLKBWRCLK) if (ENBWREN) begin
    for (k = 0; k < WR_B; k = k + 1)
      if (we_b[k]) mem[first_byte(ADDRBWRADDR, WR_B) + k] <= d_b[9*k +: 9];
    for (k = 0; k < RD_B; k = k + 1) q_b[9*k +: 9] <= mem[first_byte(ADDRBWRADDR, RD_B) + k];
  end
endmodule
