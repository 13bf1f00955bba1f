"""ragtrim in a LlamaIndex app: `RagtrimFeatures`, an indexing-time TransformComponent
(proxy/integrations/llamaindex/features.py). Never imported by the server."""

from proxy.integrations.llamaindex.features import RagtrimFeatures

__all__ = ["RagtrimFeatures"]
