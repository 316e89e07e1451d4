"""SageMaker managed MLflow of a cluster: the connection (``GET``/``PUT /clusters/{clusterTag}/mlflow``), the identity
training pods log with, and the run naming convention (:mod:`instantstart.mlflow.service`).

For the training recipes: :func:`instantstart.mlflow.service.connection` (the recorded connection or None) and
:func:`instantstart.mlflow.service.job_environment`. The package imports none of its modules, so the steps'
registration (:mod:`instantstart.mlflow.steps`) costs a cold start nothing.
"""
