"""ragtrim's CPU requests follow bench.load's compress_capacity: one worker process per
requested core (a worker compresses on one core; `--workers 2` scales with cores)."""

from __future__ import annotations

import pytest

from tests.deploy.k8s import env_of, find, objects, pod_spec, render, tools_missing

pytestmark = pytest.mark.skipif(bool(tools_missing()), reason=tools_missing() or "tools")


def ragtrim_containers(overlay: str):
    docs = objects(render(overlay))
    for dep in find(docs, "Deployment"):
        spec = pod_spec(dep)
        for c in spec.get("initContainers", []) + spec["containers"]:
            if c["name"] == "ragtrim":
                yield c, docs


def cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


@pytest.mark.parametrize("overlay", ["sidecar", "gateway"])
def test_one_worker_per_requested_core(overlay):
    found = list(ragtrim_containers(overlay))
    assert found, f"no ragtrim container in {overlay}"
    for c, docs in found:
        workers = int(env_of(c, docs).get("RAGTRIM_WORKERS", "1"))
        requested = cores(str(c["resources"]["requests"]["cpu"]))
        assert requested == workers, (overlay, requested, workers)
        assert cores(str(c["resources"]["limits"]["cpu"])) >= requested
