"""NVML as the torch-cuda backend's telemetry source (the object the telemetry hook registers).

Why apart from nvml.py: this is the plugin-facing adapter (a session in, a JSON-ready window
out); nvml.py is the sampler and knows nothing about sessions.
"""

from tensorforge_measure import TelemetrySource
from tf_cuda.telemetry import CAVEAT


class NvmlTelemetry(TelemetrySource):
    name = "nvml"
    backend = "torch-cuda"
    caveat = CAVEAT

    def collect(self, session, run_once, duration_s):
        from tf_cuda.telemetry import collect_window, telemetry_to_dict

        window = collect_window(
            run_once, device_index=session.device.index or 0, duration_s=duration_s, synchronize=session.synchronize
        )
        return telemetry_to_dict(window)
