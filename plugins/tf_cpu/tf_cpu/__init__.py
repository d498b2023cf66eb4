"""TensorForge host-CPU plugin: the machine's CPU as target `host-cpu` (Core side: machine.py,
isa.py, target.py, plugin.py) and the `torch-cpu` backend with its probes and telemetry (Ops
side: ops_plugin.py and the modules it imports). The Core side never imports torch."""
