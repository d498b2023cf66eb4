"""TensorForge vector workload plugin: softmax, norm, activation, elementwise."""
