// One lane's copy of the ALU's lookup table (vdla.hw.alu_ops: TABLE_ENTRIES entries of
// TABLE_BITS bits). Every lane keeps its own copy so that all lanes look up in the same
// cycle; LOAD LUT writes the same bytes into every copy.
// A LOAD LUT data beat writes one bus word of an element and a padding element the whole
// element, each in one cycle. So the entries are kept as bus words (word w = element *
// LUT_BEATS + beat holds entries w * ENTRIES_PER_WORD ..., byte k entry w * ENTRIES_PER_WORD
// + k), written by data beats only, and a padding element marks its LUT_BEATS words as
// padding (zeros, or with pad_min the entries' minimum) in a small memory of one row per
// element; a data beat clears its word's mark. Both memories are read asynchronously, so
// Yosys maps them to distributed RAM (LUTRAM) and the lookup lands in the ALU's write stage
// like every other op. Words rather than whole elements: the LUT RAMs are 32 deep (RAM32M),
// a table of whole elements (16 for pynq) would leave half of each empty and need a wider
// read multiplexer.
// The lookup saturates the accumulator value x to TABLE_BITS bits and offsets it by
// 2^(TABLE_BITS-1): entry clamp(x) - TABLE_MIN. A second read port looks up a code that is
// already TABLE_BITS wide (`code` -> `code_entry`): the requantizer's result on OUT's
// write-back, with CTRL's table bit (vdla.hw.requantizer).
// Yosys does not parse an import in the module header, so the (generated) package is
// imported at file scope.
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_lut (
  input  logic                     clk,
  input  logic                     clear,    // simulation only: zero the contents (see README)
  input  logic                     we,
  input  logic                     pad,      // a padding element: every word of element `elem`
  input  logic                     pad_min,  // padding of the entries' minimum, else zeros
  input  logic [LUT_ADDR_BITS-1:0] elem,
  input  logic [31:0]              beat,     // data: the word within the element
  input  logic [BUS_BITS-1:0]      wdata,
  input  logic [ACC_BITS-1:0]      x,
  output logic [TABLE_BITS-1:0]    entry,
  input  logic [TABLE_BITS-1:0]    code,
  output logic [TABLE_BITS-1:0]    code_entry
);
  localparam int ENTRIES_PER_WORD = BUS_BITS / TABLE_BITS;
  localparam int LOG_ENTRIES_PER_WORD = $clog2(ENTRIES_PER_WORD);
  localparam int WORDS = LUT_DEPTH * LUT_BEATS;
  localparam int WORD_ADDR_BITS = WORDS > 1 ? $clog2(WORDS) : 1;
  // a word's mark: {padding of the minimum, padding}. sim_clear marks every word padding of
  // zeros; a netlist's memories start at zero, i.e. data words of zeros: the same table
  typedef logic [1:0] mark_t;
  localparam mark_t MARK_DATA = 2'b00, MARK_ZEROS = 2'b01, MARK_MIN = 2'b11;
  localparam logic [TABLE_BITS-1:0] TABLE_MIN = {1'b1, {(TABLE_BITS-1){1'b0}}};
  logic [BUS_BITS-1:0] words [WORDS];
  logic [LUT_BEATS-1:0][1:0] marks [LUT_DEPTH];

  logic [WORD_ADDR_BITS-1:0] wword;
  assign wword = WORD_ADDR_BITS'((32'(elem) << LOG_LUT_BEATS) + beat);
  always_ff @(posedge clk) begin
    if (we && !pad) words[wword] <= wdata;
    for (int b = 0; b < LUT_BEATS; b++)
      if (we && (pad || beat == 32'(b))) marks[elem][b] <= !pad ? MARK_DATA : pad_min ? MARK_MIN : MARK_ZEROS;
`ifndef SYNTHESIS
    // Testbenches start every launch from a zeroed table, like the simulator does.
    if (clear) for (int i = 0; i < LUT_DEPTH; i++) marks[i] <= {LUT_BEATS{MARK_ZEROS}};
`endif
  end
`ifdef SYNTHESIS
  logic unused_clear;
  assign unused_clear = clear;
`endif

  // x within the entries' range: its bits above the entry's sign bit are all copies of it
  logic in_range;
  logic [TABLE_BITS-1:0] index;
  assign in_range = &x[ACC_BITS-1:TABLE_BITS-1] || !(|x[ACC_BITS-1:TABLE_BITS-1]);
  // offsetting a two's complement code by 2^(TABLE_BITS-1) flips its sign bit; saturated,
  // a negative x reads entry 0 and a positive one the last entry
  assign index = in_range ? {!x[TABLE_BITS-1], x[TABLE_BITS-2:0]} : {TABLE_BITS{!x[ACC_BITS-1]}};

  // two read ports: the ALU's lookup (index -> entry) and the write-back's code (-> code_entry)
  logic [31:0] rword, cword;
  logic [ENTRIES_PER_WORD-1:0][TABLE_BITS-1:0] word, cword_bits;
  logic [LUT_BEATS-1:0][1:0] mark_row, cmark_row;
  mark_t mark, cmark;
  logic [TABLE_BITS-1:0] cindex;
  assign rword = 32'(index) >> LOG_ENTRIES_PER_WORD;
  assign word = words[WORD_ADDR_BITS'(rword)];
  assign mark_row = marks[LUT_ADDR_BITS'(rword >> LOG_LUT_BEATS)];
  assign mark = mark_row[rword & 32'(LUT_BEATS - 1)];
  assign entry = mark == MARK_DATA ? word[index[LOG_ENTRIES_PER_WORD-1:0]] : mark == MARK_MIN ? TABLE_MIN : '0;
  assign cindex = {!code[TABLE_BITS-1], code[TABLE_BITS-2:0]};
  assign cword = 32'(cindex) >> LOG_ENTRIES_PER_WORD;
  assign cword_bits = words[WORD_ADDR_BITS'(cword)];
  assign cmark_row = marks[LUT_ADDR_BITS'(cword >> LOG_LUT_BEATS)];
  assign cmark = cmark_row[cword & 32'(LUT_BEATS - 1)];
  assign code_entry = cmark == MARK_DATA ? cword_bits[cindex[LOG_ENTRIES_PER_WORD-1:0]]
                    : cmark == MARK_MIN ? TABLE_MIN : '0;
endmodule
