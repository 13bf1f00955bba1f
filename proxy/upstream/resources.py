"""Errors that are ragtrim's own, not a backend's: the process or the host ran out of
file descriptors (EMFILE, ENFILE), socket buffers (ENOBUFS) or kernel memory (ENOMEM).

Opening a connection then fails inside the client library exactly like a refused
connection does (aiohttp raises ClientConnectorError, httpx ConnectError), and a
refused connection ejects the backend at once (proxy/backends/endpoint.py). Counted
against the backend, a descriptor shortage in ragtrim would turn a healthy backend into
503s until its next health check. So every failure is first asked whether it is
local: then nothing is marked, nothing fails over (the next backend would fail the
same way), and the client gets a 503 with Retry-After (LocalResourceError).

errno values: POSIX `<errno.h>`; socket(2) and connect(2) list EMFILE, ENFILE,
ENOBUFS and ENOMEM as the errors of a local shortage.
"""

from __future__ import annotations

import errno

LOCAL_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def local_os_error(exc: BaseException | None) -> OSError | None:
    """The local-shortage OSError behind `exc` (itself, its `os_error`, or anywhere in
    its cause/context chain), or None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for candidate in (exc, getattr(exc, "os_error", None)):
            if isinstance(candidate, OSError) and candidate.errno in LOCAL_ERRNOS:
                return candidate
        exc = exc.__cause__ or exc.__context__
    return None
