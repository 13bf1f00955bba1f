"""Tenants: who may spend what, and who owns what.

Owns: per-tenant accounting (accounting.py), per-tenant rate and token limits in Redis
(rate_limits.py), the usage report (usage_report.py) and the owners of stored Responses
API ids (owners.py). May import prompt/ and the foundation modules only.
"""
