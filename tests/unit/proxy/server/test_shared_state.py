"""Issue 44: `--workers 2` without Redis let a tenant through at twice its quota and
404'd 9 of 16 GETs of one's own stored response (each worker its own window and owner
record). Quotas and response owners are one record or none: with either on and no
redis.url, ragtrim refuses to start more than one worker and says why."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proxy.server.workers import Supervisor, unshared
from proxy.settings import Settings

ROOT = Path(__file__).resolve().parents[4]
TENANCY = {"api_keys": {"key-a": "acme"}, "salt_secret": "shared-state-secret-16"}
QUOTAS = {"requests_per_minute": 10}


def settings(**opts) -> Settings:
    return Settings(workers=2, backends=["http://127.0.0.1:9"], **opts)


@pytest.mark.parametrize(
    ("opts", "named"),
    [({"tenancy": TENANCY}, ["response owners"]), ({"tenancy": {"quotas": QUOTAS}}, ["quotas"]),
     ({"tenancy": {**TENANCY, "quotas": QUOTAS}}, ["quotas", "response owners"])],
)  # fmt: skip
def test_workers_without_redis_are_refused_with_quotas_or_tenancy(opts, named, caplog):
    supervisor = Supervisor(settings(**opts))
    with caplog.at_level(logging.ERROR, logger="ragtrim.workers"):
        assert supervisor.run() == 2
    assert supervisor.procs == []  # nothing was started
    assert all(n in caplog.text for n in named) and "redis.url" in caplog.text


def test_with_redis_or_one_worker_nothing_is_refused():
    both = {"tenancy": {**TENANCY, "quotas": QUOTAS}}
    assert unshared(settings(redis={"url": "redis://127.0.0.1:6379/0"}, **both)) == []
    assert unshared(Settings(workers=1, **both)) == []
    assert unshared(settings()) == []  # no tenancy, no quotas: per worker is only slower


def test_the_warning_without_redis_names_quotas_and_owners(caplog):
    with caplog.at_level(logging.WARNING, logger="ragtrim.workers"):
        assert Supervisor(settings()).preflight()
    assert "quotas" in caplog.text and "response owners" in caplog.text


def test_ragtrim_serve_exits_at_start_with_the_reason():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "RAGTRIM_TENANCY__API_KEYS": json.dumps(TENANCY["api_keys"]),
           "RAGTRIM_TENANCY__SALT_SECRET": TENANCY["salt_secret"]}  # fmt: skip
    args = [sys.executable, "-m", "proxy", "serve", "--workers", "2", "--port", "0",
            "--backends", "http://127.0.0.1:9"]  # fmt: skip
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "response owners" in done.stderr and "redis.url" in done.stderr
