"""Capacity rules of a create: training plans, preflight checks (zone offerings, service quotas), pinned subnets."""
