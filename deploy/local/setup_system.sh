#!/usr/bin/env bash
# What the test suite needs from the system, installed the way .ci/run used to do it
# (issue 21: `make test` on a fresh machine skipped the DNS discovery test, because only
# .ci/run installed dnsmasq). Idempotent: does nothing when both are already there.
#   - dnsmasq-base: real DNS for tests/integration/test_discovery.py (Debian package);
#   - a Redis server on 127.0.0.1:6379 for the shared-store tests (started if none answers).
set -euo pipefail
apt_install() {
  local runner=()
  [ "$(id -u)" = 0 ] || runner=(sudo)
  "${runner[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${runner[@]}" apt-get install -y -qq "$@"
}
if ! command -v dnsmasq >/dev/null 2>&1 && [ ! -x /usr/sbin/dnsmasq ]; then
  echo "[setup] installing dnsmasq-base (real DNS for the discovery test)"
  apt_install dnsmasq-base
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  command -v redis-server >/dev/null 2>&1 || { echo "[setup] installing redis-server"; apt_install redis-server; }
  echo "[setup] starting redis-server on 127.0.0.1:6379"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 50); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
