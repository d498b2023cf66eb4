"""Ops side of tf_cpu: the torch-cpu backend, its calibration probes, its telemetry source and the
host CPU's energy counter (RAPL, read beside a GPU's),
registered through the 'tensorforge_measure' entry-point group like any third-party plugin."""

from tensorforge_measure import HostEnergySource, TelemetrySource, Unavailable, hookimpl
from tf_cpu.backend import TorchCpuBackend
from tf_cpu.probes import REGIME, CpuCallFloorProbe, CpuMatmulProbe, CpuMemoryBandwidthProbe
from tf_cpu.telemetry import CAVEAT, collect_window


class HostCpuTelemetry(TelemetrySource):
    name = "host-cpu"
    backend = "torch-cpu"
    caveat = CAVEAT

    def collect(self, session, run_once, duration_s):
        return collect_window(run_once, session.machine.cpus, duration_s)


@hookimpl
def tensorforge_measure_register_backends(register):
    register(TorchCpuBackend())


@hookimpl
def tensorforge_measure_register_probes(register):
    register(CpuMatmulProbe())
    register(CpuMemoryBandwidthProbe())
    register(CpuCallFloorProbe())
    from tensorforge_measure import EstimateTermsProbe

    register(EstimateTermsProbe("torch-cpu", name="cpu-estimate-terms", regime=REGIME))


class RaplEnergy(HostEnergySource):
    """The host CPU's package energy through RAPL (Linux powercap), read beside a GPU's counter."""

    name = "rapl"
    description = "RAPL package domains (Linux powercap energy_uj), summed"

    def open(self):
        from tf_cpu.rapl import Rapl

        rapl, reason = Rapl.open()
        if rapl is None:
            raise Unavailable(str(reason))
        return rapl


@hookimpl
def tensorforge_measure_register_telemetry(register):
    register(HostCpuTelemetry())


@hookimpl
def tensorforge_measure_register_host_energy(register):
    register(RaplEnergy())
