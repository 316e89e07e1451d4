"""Kubernetes access: per-cluster client, server-side apply helper, object builders."""
