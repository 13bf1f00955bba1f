"""Operators' view of each request: traces (tracing.py, traced.py), the
per-request record the access log and accounting read (record.py), the access log
(accesslog.py), the ASGI middleware that closes each request's record (middleware.py)
and the wrapping of the parts it observes (wrap.py). May import stages/ (the quota
stage it wraps), tenancy/, http/ and the foundation modules.
"""
