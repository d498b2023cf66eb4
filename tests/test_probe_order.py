"""Calibration probe order: sustained probes last (they leave the device hot), and among the
others ascending `order`, so the estimate's long burst sweep (order 100) runs after the burst
ceiling probes and before the sustained ones; ties keep registration order. The estimate's
fitted coefficients are stored as the regime its sweep ran in."""

from types import SimpleNamespace

from tensorforge_ops.api import CalibrationProbe, ProbeResult
from tensorforge_ops.calibrate import store as calibration
from tensorforge_ops.calibrate.estimate_fit import probe_regime
from tensorforge_ops.calibrate.estimate_probes import EstimateTermsProbe


class Probe(CalibrationProbe):
    def __init__(self, name, regime="burst", order=0, ran=None):
        self.name, self.regime, self.order, self.ran = name, regime, order, ran

    def run(self, session):
        self.ran.append(self.name)
        compute = {} if self.order else {"fp32": 1e12}
        return ProbeResult(name=self.name, method="test", compute=compute, regime=self.regime,
                           dram_bytes_per_s=None if self.order else 1e11,
                           details={"points": []} if self.order else {})


def session():
    return SimpleNamespace(info=SimpleNamespace(fingerprint="fp", name="dev", details={}))


def test_sustained_last_and_the_estimate_sweep_after_the_burst_ceilings():
    ran: list[str] = []
    probes = [Probe("sweep", order=100, ran=ran), Probe("matmul-sustained", "sustained", ran=ran),
              Probe("matmul", ran=ran), Probe("copy", ran=ran)]
    cal = calibration.run_probes(session(), probes)
    assert ran == ["matmul", "copy", "sweep", "matmul-sustained"]
    assert probe_regime(cal) == "burst"
    assert calibration.regimes(cal) == ["burst", "sustained"]


def test_the_shipped_estimate_probe_is_ordered_after_ceilings_in_its_backend_regime():
    assert EstimateTermsProbe().order > 0 and EstimateTermsProbe().regime == "burst"
    # a one-regime device's sweep is that regime's: no empty 'burst' ceilings appear beside it
    ran: list[str] = []
    cpu = [Probe("cpu-matmul", "single", ran=ran), Probe("cpu-sweep", "single", order=100, ran=ran)]
    cal = calibration.run_probes(session(), cpu)
    assert ran == ["cpu-matmul", "cpu-sweep"]
    assert calibration.regimes(cal) == ["single"] and cal.ceilings.compute == {"fp32": 1e12}
    assert probe_regime(cal) == "single"
    assert EstimateTermsProbe("torch-cpu", regime="single").regime == "single"
