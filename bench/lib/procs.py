"""Processes the overhead benchmark measures: nginx started and stopped by PID, and
CPU time read from /proc (utime + stime of a process and all its descendants)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")

NGINX_CONF = """
worker_processes 1;
error_log {dir}/error.log warn;
pid {dir}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  upstream backend {{ server 127.0.0.1:{backend}; keepalive 128; keepalive_requests 10000000; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }}
  }}
}}
"""


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def cpu_ms(pid: int) -> float:
    """CPU milliseconds used so far by `pid` and every live descendant."""
    tree, total, todo = _children(), 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(tree.get(p, []))
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total * 1000 / CLK_TCK


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else "")
    if not found:
        raise RuntimeError("nginx not found: `make setup` installs Debian's nginx-light")
    return found


def start_nginx(port: int, backend_port: int) -> tuple[subprocess.Popen, str]:
    workdir = tempfile.mkdtemp(prefix="ragtrim-nginx-")
    conf = Path(workdir) / "nginx.conf"
    conf.write_text(NGINX_CONF.format(dir=workdir, port=port, backend=backend_port))
    args = [nginx_binary(), "-c", str(conf), "-p", workdir, "-g", "daemon off;"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    return proc, workdir
