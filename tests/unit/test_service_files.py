"""The service files: the systemd unit (deploy/systemd/), the Dockerfile and compose.yaml.

The unit's hardening is read from the file, and its restart rules against the CLI's exit
codes and the Worker's grace period; `systemd-analyze verify` and `docker compose config`
check the files where those tools are installed (the tests use what is there and install
nothing). Building the image needs a Docker daemon and a registry: not in the tests."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from safelight.cli.failures import EXIT_DATABASE, EXIT_INTERNAL, EXIT_USAGE
from safelight.settings import ROOT_HOME, Settings

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "safelight-worker.service"
SERVICE_EXECUTABLE = "/opt/safelight/.venv/bin/safelight"


def unit_entries(text: str) -> dict[str, list[tuple[str, str]]]:
    """section -> [(key, value)] in order; a key may repeat, as systemd allows."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if heading := re.fullmatch(r"\[(\w+)\]", line):
            current = sections.setdefault(heading[1], [])
            continue
        assert current is not None, f"{line!r} before any section"
        key, sep, value = line.partition("=")
        assert sep, f"not a key=value line: {line!r}"
        current.append((key.strip(), value.strip()))
    return sections


SERVICE = unit_entries(UNIT.read_text("utf-8"))["Service"]


def values(key: str) -> list[str]:
    return [value for k, value in SERVICE if k == key]


def value(key: str) -> str:
    [only] = values(key)
    return only


def seconds(span: str) -> float:
    match = re.fullmatch(r"(\d+)(s|min)?", span)
    assert match is not None, f"{span!r}: write it in s or min"
    return int(match[1]) * (60 if match[2] == "min" else 1)


def systemd_analyze_verify(unit: Path) -> subprocess.CompletedProcess[str]:
    """What ``systemd-analyze verify`` says of the unit file ``unit``."""
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_unit_runs_a_worker_as_its_own_user() -> None:
    assert value("User") == value("Group") == "safelight"
    assert values("DynamicUser") in ([], ["no"])
    assert value("ExecStart") == f"{SERVICE_EXECUTABLE} worker"
    assert value("Type") == "exec"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("ProtectSystem", "strict"),
        ("ProtectHome", "read-only"),
        ("PrivateTmp", "yes"),
        ("PrivateDevices", "yes"),
        ("NoNewPrivileges", "yes"),
        ("CapabilityBoundingSet", ""),
        ("AmbientCapabilities", ""),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        ("ProtectControlGroups", "yes"),
        ("RestrictSUIDSGID", "yes"),
        ("RestrictNamespaces", "yes"),
        ("LockPersonality", "yes"),
        ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
        ("SystemCallArchitectures", "native"),
        ("SystemCallFilter", "@system-service"),
    ],
)
def test_the_unit_is_hardened(key: str, expected: str) -> None:
    assert value(key) == expected


def test_setpriv_keeps_the_system_calls_it_needs() -> None:
    """setpriv --pdeathsig (each ffmpeg dies with its Worker) calls capset, which
    ~@privileged would refuse: every video would then fail."""
    assert not [f for f in values("SystemCallFilter") if "privileged" in f]
    assert values("MemoryDenyWriteExecute") in ([], ["no"])


def test_only_the_home_is_writable_and_the_libraries_are_read_only() -> None:
    state = value("StateDirectory")
    assert f"/var/lib/{state}" == str(ROOT_HOME)
    assert f"SAFELIGHT_HOME={ROOT_HOME}" in values("Environment")
    assert values("ReadOnlyPaths"), "the libraries are named read-only"
    assert values("ReadWritePaths") == [], "nothing but the state directory is writable"
    # Private on disk (ADR 0043): what the Worker makes is its user's alone.
    assert value("UMask") == "0077"
    assert value("StateDirectoryMode") == "0700"


def test_the_password_comes_from_a_file_never_from_the_unit() -> None:
    assert value("EnvironmentFile").startswith("/etc/safelight/")
    assert not [e for e in values("Environment") if "DATABASE_URL" in e or "PASSWORD" in e]
    assert not re.search(r"postgres(ql)?://", UNIT.read_text("utf-8"))


def test_the_restart_rules_follow_the_exit_codes() -> None:
    assert value("Restart") == "on-failure"
    assert seconds(value("RestartSec")) >= 1
    prevented = {int(code) for code in value("RestartPreventExitStatus").split()}
    assert prevented == {EXIT_USAGE}, "a usage error is the one a restart cannot mend"
    assert not prevented & {EXIT_DATABASE, EXIT_INTERNAL}


def test_a_stop_leaves_the_worker_its_grace_period() -> None:
    """SIGTERM to the Worker alone (its children die with it), and time to release."""
    assert value("KillMode") == "mixed"
    assert values("KillSignal") in ([], ["SIGTERM"])
    grace = Settings().shutdown_grace_seconds
    assert seconds(value("TimeoutStopSec")) >= grace + 10


def test_the_unit_gives_the_worker_room_for_its_descriptors() -> None:
    """The soft and hard open files limit: the Worker raises its soft limit to the hard
    one, and a service's default hard limit is not what this unit relies on."""
    limit = int(value("LimitNOFILE"))
    assert limit >= 16 * Settings().metrics_max_connections
    assert limit >= 65536


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here"
)
def test_systemd_analyze_verify_finds_nothing_to_say(tmp_path: Path) -> None:
    """Any line it prints (an unknown key, a value it cannot parse) fails the test. The
    one change: ExecStart points at an executable that exists here, as verify wants."""
    executable = tmp_path / "safelight"
    executable.write_text("#!/bin/sh\nexit 0\n")
    executable.chmod(0o755)
    text = UNIT.read_text("utf-8")
    assert text.count(SERVICE_EXECUTABLE) == 1
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace(SERVICE_EXECUTABLE, str(executable)))

    result = systemd_analyze_verify(copy)

    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_systemd_analyze_would_catch_a_mistake(tmp_path: Path) -> None:
    """The check above can fail: a misspelt value is reported."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed here")
    copy = tmp_path / UNIT.name
    copy.write_text(
        UNIT.read_text("utf-8")
        .replace(SERVICE_EXECUTABLE, "/bin/true")
        .replace("ProtectSystem=strict", "ProtectSystem=strickt")
    )
    result = systemd_analyze_verify(copy)
    assert "strickt" in result.stdout + result.stderr


# --- the image and compose.yaml -----------------------------------------------------------

DOCKERFILE = (ROOT / "Dockerfile").read_text("utf-8")


def instructions(name: str) -> list[str]:
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    return [
        line.split(None, 1)[1]
        for line in joined.splitlines()
        if line.split(None, 1)[:1] == [name] and len(line.split(None, 1)) == 2
    ]


def test_the_image_is_debians_python_with_its_ffmpeg() -> None:
    [base] = instructions("FROM")
    assert re.fullmatch(r"(python:3\.11-slim-bookworm|debian:bookworm-slim)", base)
    assert any("apt-get install" in run and " ffmpeg" in run for run in instructions("RUN"))


def test_the_image_installs_the_runtime_lock_with_its_hashes_and_nothing_else() -> None:
    runs = " ".join(instructions("RUN"))
    # The runtime lock, or with --build-arg SAFELIGHT_FACES=1 the faces lock (docs/faces.md).
    assert "lock=requirements/runtime.lock" in runs and '--require-hashes -r "$lock"' in runs
    assert 'if [ "$SAFELIGHT_FACES" = 1 ]; then lock=requirements/faces.lock; fi' in runs
    assert "ARG SAFELIGHT_FACES=0" in DOCKERFILE
    assert "--no-deps --no-build-isolation ." in runs
    assert "dev.lock" not in DOCKERFILE and "[dev]" not in DOCKERFILE


def test_the_image_runs_as_an_unprivileged_user_with_its_home() -> None:
    [user] = instructions("USER")
    assert user not in ("root", "0")
    assert f"SAFELIGHT_HOME={ROOT_HOME}" in " ".join(instructions("ENV"))
    assert instructions("ENTRYPOINT") == ['["safelight"]']


def test_the_build_context_is_only_what_the_image_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text("utf-8").splitlines()
    assert ignore[ignore.index("*") + 1 :][:5] == [
        "!requirements/runtime.lock",
        "!pyproject.toml",
        "!README.md",
        "!LICENSE",
        "!src/",
    ]
    for copied in instructions("COPY"):
        *sources, _destination = copied.split()
        for source in sources:
            assert (ROOT / source).exists(), source


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "compose.yaml").read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_compose_runs_workers_beside_postgresql() -> None:
    services = compose()["services"]
    assert services["db"]["image"].startswith("postgres:")
    worker = services["worker"]
    assert worker["build"] == "."
    assert worker["command"][0] == "worker"
    assert worker["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert services["db"]["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]


def test_compose_mounts_the_photos_read_only_and_keeps_the_home_in_a_volume() -> None:
    document = compose()
    volumes = document["services"]["worker"]["volumes"]
    photos = [v for v in volumes if v.endswith(":/photos:ro")]
    assert len(photos) == 1 and photos[0].startswith("${SAFELIGHT_PHOTOS:?")
    assert f"home:{ROOT_HOME}" in volumes and "home" in document["volumes"]


def test_compose_takes_the_password_from_env_and_writes_none() -> None:
    services = compose()["services"]
    url = services["worker"]["environment"]["SAFELIGHT_DATABASE_URL"]
    assert url.startswith("postgresql://safelight:${SAFELIGHT_DB_PASSWORD:?")
    assert services["db"]["environment"]["POSTGRES_PASSWORD"].startswith(
        "${SAFELIGHT_DB_PASSWORD:?"
    )
    assert ".env" in (ROOT / ".gitignore").read_text("utf-8").splitlines()


def test_compose_checks_health_and_confines_the_worker() -> None:
    worker = compose()["services"]["worker"]
    assert worker["healthcheck"]["test"] == ["CMD", "safelight", "health"]
    assert worker["read_only"] is True and worker["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in worker["security_opt"]
    assert worker["init"] is True
    assert seconds(worker["stop_grace_period"]) >= Settings().shutdown_grace_seconds + 10


def _has_compose_plugin() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(
        ["docker", "compose", "version"], capture_output=True, timeout=30, check=False
    )
    return probe.returncode == 0


def test_docker_compose_config_accepts_the_file(tmp_path: Path) -> None:
    if not _has_compose_plugin():
        pytest.skip("docker compose (the plugin) is not installed here")
    (tmp_path / ".env").write_text(f"SAFELIGHT_DB_PASSWORD=abc123\nSAFELIGHT_PHOTOS={tmp_path}\n")
    result = subprocess.run(
        [
            "docker", "compose", "--project-directory", str(ROOT),
            "--env-file", str(tmp_path / ".env"), "-f", str(ROOT / "compose.yaml"),
            "config", "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (0, "")
