"""The offline sandbox: the whole control plane on one machine against emulated AWS and Kubernetes."""
