"""The AWS side of the offline sandbox: moto behind a WSGI extension that fills its gaps.

- :mod:`sandbox.aws.server` — :class:`~sandbox.aws.server.AwsSandboxServer` (moto + extension, threaded).
- :mod:`sandbox.aws.extension` — :class:`~sandbox.aws.extension.AwsExtension`: routing by the botocore
  service model, fault injection, emulated operations, pass-through to moto.
- :mod:`sandbox.aws.eks` — EKS cluster lifecycle, add-ons (catalog in :mod:`sandbox.aws.addons`),
  access entries, pod identity associations.
- :mod:`sandbox.aws.hyperpod` — SageMaker HyperPod clusters, nodes (shapes in :mod:`sandbox.aws.instances`),
  state-change and node-health events.
- :mod:`sandbox.aws.eventbridge` — Lambda / Step Functions targets of EventBridge rules; event emission.
- :mod:`sandbox.aws.ec2` — DescribeInstanceTypeOfferings with EC2's wildcard filters.
"""
