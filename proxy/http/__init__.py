"""The HTTP edge: the route table (route_table.py), path normalisation (paths.py), the
request head read once (head.py), values from the client capped for logs and labels
(capped.py), refusals in the envelope (refusals.py) and the uvicorn protocol that bounds
request heads and bodies (edge.py). May import the foundation modules only.
"""
