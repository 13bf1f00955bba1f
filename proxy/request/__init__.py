"""The request half of the data plane: the forwarder and what it calls before the
response half takes over.

Owns: the forwarder (forward.py: key, body, admission, parse, pipeline, ranking, one call
to proxy/response/), body parsing with exact integers and shape caps (parse.py),
admission control (admission.py) and the stage runner (pipeline.py). May import the
packages below it (telemetry, stages, response, routing, ...) and the per-request state
(proxy/context.py); never the server or the composition root.
"""
