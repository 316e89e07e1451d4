"""SageMaker managed MLflow of a cluster: the connection (``GET``/``PUT /clusters/{clusterTag}/mlflow``), the identity
training pods log with, and the run naming convention (:mod:`instantstart.mlflow.service`).

For the training recipes: :func:`connection` (the recorded connection or None) and :func:`job_environment`.
"""

from __future__ import annotations

from instantstart.mlflow.service import JOB_RUN_TAG, connection, job_environment

__all__ = ["JOB_RUN_TAG", "connection", "job_environment"]
