"""Backend choice: the router (filters → weighted scorers → picker, router.py), its parts
by name (registry.py) and KV-event routing (kv/, with the request's token ids,
kv/chat_tokens.py). Ranks the records of backends/; may import compression/ (the token
counter's model root), backends/ and the foundation modules.
"""
