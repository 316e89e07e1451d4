"""The sandbox's Kubernetes side: an emulated, CRD-aware Kubernetes API server.

- :mod:`sandbox.kube.server` -- :class:`~sandbox.kube.server.KubeApiServer`, HTTPS with its own CA,
  one path prefix per EKS cluster (``/clusters/<name>``), accepted by the official client.
- :mod:`sandbox.kube.store` -- :class:`~sandbox.kube.store.KubeCluster`, the objects of one cluster
  and their API semantics; also the in-process API for the AWS emulation.
- :mod:`sandbox.kube.controllers` -- simulated scheduler, kubelet, workload, volume and GC controllers.
- :mod:`sandbox.kube.auth` -- :func:`~sandbox.kube.auth.eks_token_validator` for EKS bearer tokens.
"""
