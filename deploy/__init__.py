"""Deployment: local CPU vLLM (deploy/local), the image (deploy/docker), manifests
(deploy/k8s) and dashboards (deploy/grafana). A package only so that deploy/local's
process control and model builders import and run one way (`deploy.local.<name>`)."""
