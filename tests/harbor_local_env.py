"""A Harbor environment for a container engine without a registry (loaded BY HARBOR, in its
own Python >= 3.12 venv: `harbor run -e harbor_local_env:NoNetworkDocker`, with this folder
on PYTHONPATH; nothing here imports tbmm).

Harbor 0.26's `docker` environment enforces `network_mode = "no-network"` through an
egress-control sidecar whose images come from Docker Hub, so on a machine that cannot pull
them it refuses every no-network task. This subclass enforces no-network the way Harbor's
cloud compose environments do, with Harbor's own `docker-compose-no-network.yaml` overlay
(`network_mode: none` on the main service), and declares that it can. Its image builds run
without a network too (`build.network: none`: the exported Dockerfiles build offline, and
the engine here has no bridge network). Everything else is Harbor's docker environment
unchanged."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.environments.docker import COMPOSE_NO_NETWORK_PATH
from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.config import NetworkMode


class NoNetworkDocker(DockerEnvironment):
    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return super().capabilities.model_copy(update={"disable_internet": True})

    @property
    def _docker_compose_paths(self) -> list[Path]:
        paths = list(super()._docker_compose_paths)
        if self.network_policy.network_mode == NetworkMode.NO_NETWORK:
            paths.append(COMPOSE_NO_NETWORK_PATH)
        paths.append(_offline_build_overlay())
        return paths


def _offline_build_overlay() -> Path:
    path = Path(tempfile.gettempdir()) / "tbmm-harbor-offline-build.json"
    if not path.is_file():
        doc = {"services": {"main": {"build": {"network": "none"}}}}
        path.write_text(json.dumps(doc))
    return path
