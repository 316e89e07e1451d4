"""Capacity rules: instance groups, training plans and preflight checks of HyperPod capacity."""
