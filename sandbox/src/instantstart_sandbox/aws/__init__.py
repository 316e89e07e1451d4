"""The AWS side of the offline sandbox: moto behind a WSGI extension that fills its gaps.

- :mod:`.server` — :class:`~.server.AwsSandboxServer` (moto + extension, threaded).
- :mod:`.extension` — :class:`~.extension.AwsExtension`: routing by the botocore
  service model, fault injection, emulated operations, pass-through to moto.
- :mod:`.eks` — EKS cluster lifecycle, add-ons (catalog in :mod:`.addons`),
  access entries, pod identity associations.
- :mod:`.hyperpod` — SageMaker HyperPod clusters, nodes (shapes in :mod:`.instances`),
  state-change and node-health events.
- :mod:`.eventbridge` — Lambda / Step Functions targets of EventBridge rules; event emission.
- :mod:`.ec2` — DescribeInstanceTypeOfferings with EC2's wildcard filters.
"""
