# Builds a VDLA bitstream for one board with Vivado (batch mode).
#   vivado -mode batch -source bitstreams/vivado_build.tcl -tclargs <build dir>
# <build dir> is prepared by `python -m vdla.bitstreams.build <board>`: it holds params.tcl
# (part, clock, control base, DRAM data width: all from the board manifest and the hardware config),
# sources.txt (the generated package, the RTL and the board wrapper vdla_axi_top.v) and
# vdla_id.xdc (the bitstream's USERID: the config hash's 32-bit ID).
# Output: <build dir>/vdla_<board>.bit and .hwh (the files PYNQ loads).

set build_dir [file normalize [lindex $argv 0]]
source [file join $build_dir params.tcl]

create_project -force vdla_$board [file join $build_dir vivado] -part $part
set fh [open [file join $build_dir sources.txt]]
foreach src [split [string trim [read $fh]] "\n"] { add_files -norecurse $src }
close $fh
foreach src [get_files *.sv] { set_property file_type SystemVerilog $src }
add_files -fileset constrs_1 -norecurse [file join $build_dir vdla_id.xdc]
update_compile_order -fileset sources_1

create_bd_design vdla
set core [create_bd_cell -type module -reference vdla_axi_top vdla_0]

if {$family eq "zynq"} {
  # Zynq-7000: GP0 master for the registers, the cache-coherent ACP (64 bit) for DRAM
  set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7 ps]
  set_property -dict [list CONFIG.PCW_USE_M_AXI_GP0 {1} CONFIG.PCW_USE_S_AXI_ACP {1} \
      CONFIG.PCW_USE_DEFAULT_ACP_USER_VAL {1} CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ $clock_mhz] $ps
  set ps_master $ps/M_AXI_GP0
  set ps_slave $ps/S_AXI_ACP
  set ps_clk $ps/FCLK_CLK0
  set ps_rstn $ps/FCLK_RESET0_N
  connect_bd_net [get_bd_pins $ps_clk] [get_bd_pins $ps/M_AXI_GP0_ACLK] [get_bd_pins $ps/S_AXI_ACP_ACLK]
  apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \
      -config {make_external "FIXED_IO, DDR" Master "Disable" Slave "Disable"} $ps
} else {
  # Zynq UltraScale+ (Ultra96, ZCU104, the KV260's xck26, AUP-ZU3): HPM0_FPD for the registers, the
  # coherent HPC0 for DRAM at the config's bus width (32, 64 or 128 bits)
  set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:zynq_ultra_ps_e ps]
  set_property -dict [list CONFIG.PSU__USE__M_AXI_GP0 {1} CONFIG.PSU__USE__M_AXI_GP1 {0} \
      CONFIG.PSU__USE__S_AXI_GP0 {1} CONFIG.PSU__SAXIGP0__DATA_WIDTH $dram_bits \
      CONFIG.PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ $clock_mhz] $ps
  set ps_master $ps/M_AXI_HPM0_FPD
  set ps_slave $ps/S_AXI_HPC0_FPD
  set ps_clk $ps/pl_clk0
  set ps_rstn $ps/pl_resetn0
  connect_bd_net [get_bd_pins $ps_clk] [get_bd_pins $ps/maxihpm0_fpd_aclk] [get_bd_pins $ps/saxihpc0_fpd_aclk]
}

set rst [create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset rst]
connect_bd_net [get_bd_pins $ps_clk] [get_bd_pins $rst/slowest_sync_clk]
connect_bd_net [get_bd_pins $ps_rstn] [get_bd_pins $rst/ext_reset_in]

# registers: PS master -> one-port SmartConnect -> s_axi_control
set ctl [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect ctl]
set_property -dict [list CONFIG.NUM_SI {1} CONFIG.NUM_MI {1}] $ctl
connect_bd_intf_net [get_bd_intf_pins $ps_master] [get_bd_intf_pins $ctl/S00_AXI]
connect_bd_intf_net [get_bd_intf_pins $ctl/M00_AXI] [get_bd_intf_pins $core/s_axi_control]

# DRAM: the four masters (fetch, load, compute, store) -> SmartConnect -> PS slave port
set mem [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect mem]
set_property -dict [list CONFIG.NUM_SI {4} CONFIG.NUM_MI {1}] $mem
set k 0
foreach m {m_axi_fetch m_axi_load m_axi_comp m_axi_store} {
  connect_bd_intf_net [get_bd_intf_pins $core/$m] [get_bd_intf_pins $mem/S0${k}_AXI]
  incr k
}
connect_bd_intf_net [get_bd_intf_pins $mem/M00_AXI] [get_bd_intf_pins $ps_slave]

foreach pin [list $core/ap_clk $ctl/aclk $mem/aclk] { connect_bd_net [get_bd_pins $ps_clk] [get_bd_pins $pin] }
foreach pin [list $core/ap_rst_n $ctl/aresetn $mem/aresetn] {
  connect_bd_net [get_bd_pins $rst/peripheral_aresetn] [get_bd_pins $pin]
}

assign_bd_address
set seg [get_bd_addr_segs -of_objects [get_bd_addr_spaces $ps_master] -filter {NAME =~ *vdla_0*}]
set_property offset $control_base $seg
set_property range 4K $seg
validate_bd_design
save_bd_design

make_wrapper -files [get_files vdla.bd] -top
add_files -norecurse [glob [file join $build_dir vivado vdla_$board.gen sources_1 bd vdla hdl vdla_wrapper.v]]
set_property top vdla_wrapper [current_fileset]
update_compile_order -fileset sources_1

launch_runs impl_1 -to_step write_bitstream -jobs 4
wait_on_run impl_1
if {[get_property PROGRESS [get_runs impl_1]] ne "100%"} { error "implementation failed; see the impl_1 run log" }
open_run impl_1
report_utilization -file [file join $build_dir utilization.rpt]
report_timing_summary -file [file join $build_dir timing.rpt]

set run_dir [get_property DIRECTORY [get_runs impl_1]]
file copy -force [file join $run_dir vdla_wrapper.bit] [file join $build_dir vdla_$board.bit]
file copy -force [glob [file join $build_dir vivado vdla_$board.gen sources_1 bd vdla hw_handoff vdla.hwh]] \
    [file join $build_dir vdla_$board.hwh]
