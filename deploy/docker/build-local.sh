#!/usr/bin/env bash
# Build the image without a Docker engine or a registry: Debian's buildah (chroot
# isolation, vfs storage, both rootless-friendly and daemonless) on a local base made
# with debootstrap. Tried once on a machine with neither; see deploy/docker/README.md.
#   apt-get install -y buildah debootstrap
#   deploy/docker/build-local.sh [TAG] [--build-arg K=V ...]
# EXTRA_CA=/path/ca.pem copies a CA bundle into the base (a TLS-intercepting proxy).
set -euo pipefail
tag=${1:-localhost/ragtrim:slim}; shift || true
work=${WORK:-/tmp/ragtrim-buildah}
bh=(buildah --storage-driver vfs)
mkdir -p "$work"
if [ ! -x "$work/rootfs/usr/bin/python3" ]; then
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip \
    bookworm "$work/rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
fi
if ! "${bh[@]}" inspect --type image localhost/debian-python:bookworm >/dev/null 2>&1; then
  ctr=$("${bh[@]}" from scratch)
  mnt=$("${bh[@]}" mount "$ctr")
  cp -a "$work/rootfs/." "$mnt/"
  env_args=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  if [ -n "${EXTRA_CA:-}" ]; then
    cp "$EXTRA_CA" "$mnt/etc/ssl/certs/ca-certificates.crt"
    env_args+=(--env PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
  fi
  "${bh[@]}" umount "$ctr"
  "${bh[@]}" config "${env_args[@]}" "$ctr"
  "${bh[@]}" commit --rm "$ctr" localhost/debian-python:bookworm
fi
# The python:3.11-slim base is replaced by the local one; --format docker keeps HEALTHCHECK.
"${bh[@]}" bud --isolation chroot --format docker \
  --build-arg PYTHON_IMAGE=localhost/debian-python:bookworm "$@" \
  -f deploy/docker/Dockerfile -t "$tag" .
