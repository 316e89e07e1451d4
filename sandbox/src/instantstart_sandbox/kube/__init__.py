"""The sandbox's Kubernetes side: an emulated, CRD-aware Kubernetes API server.

- :mod:`.server` -- :class:`~.server.KubeApiServer`, HTTPS with its own CA,
  one path prefix per EKS cluster (``/clusters/<name>-<id>``, new for each creation), accepted by the official client.
- :mod:`.store` -- :class:`~.store.KubeCluster`, the objects of one cluster
  and their API semantics; also the in-process API for the AWS emulation.
- :mod:`.controllers` -- simulated scheduler, kubelet, workload, volume and GC controllers.
- :mod:`.auth` -- :func:`~.auth.eks_token_validator` for EKS bearer tokens.
"""
