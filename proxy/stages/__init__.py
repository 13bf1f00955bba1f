"""Pipeline stages. Their order is the list in proxy/components.py `make_stages`; each
reads and writes the per-request state (proxy/context.py). May import compression/,
gate/, tenancy/, prompt/ and the foundation modules."""
