import tf_edge_npu

from tensorforge.testing import check_target


def test_the_target_is_well_formed():
    check_target(tf_edge_npu.EDGE_NPU)  # validates, ceilings > 0, sources, file round trip


def test_peak_bf16_rate(tensorforge_host):
    host = tensorforge_host(tf_edge_npu)
    assert host.reports["tf_edge_npu"].registered == {"targets": ("edge-npu",)}
    target = host.target("edge-npu")
    # 8 cores x 1024 FLOP/clock x 1.4 GHz
    assert target.pe_array.units * target.pe_array.flops_per_clock["bf16"] * 1.4e9 == 11.4688e12
