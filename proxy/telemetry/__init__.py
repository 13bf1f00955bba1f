"""Operators' view of each request (issue 22): traces (tracing.py, traced.py), the
per-request record the access log and accounting read (record.py)."""
