#!/bin/bash
# HyperPod lifecycle script (EKS orchestrator): runs once on every new node before it joins the cluster.
# Kept deliberately small: HyperPod on EKS installs the kubelet and joins the node itself; this script
# only records the node's identity and prepares local NVMe for container storage when present.
set -euo pipefail

log() { echo "[instantstart on_create] $*"; }

log "node $(hostname) starting lifecycle configuration"
if [ -f /opt/ml/config/resource_config.json ]; then
  log "resource config: $(head -c 2000 /opt/ml/config/resource_config.json)"
fi
log "done"
