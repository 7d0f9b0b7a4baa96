"""Run processes the way a manifest or the compose file describes them, inside a network
namespace of their own (``unshare -n python netns_run.py SPEC.json``), so that they can listen
on their real ports (8080, 9101, 9102, Redis on 6379) whatever else runs on the machine.

SPEC: ``{"redis_server", "workdir", "python", "hook", "processes": [{"name", "command",
"env", "probes": [{"kind", "port", "path"}]}], "api_port", "drain_seconds"}``.

Starts a redis-server, every process under ``readonly_hook.py``, waits until every probe
answers 200 (or the time is up), creates a game through the gateway, sends SIGTERM to all, and
prints one JSON object: each probe's last status, the game's, the exit codes and every write
attempt outside /tmp.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import signal
import socket
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, in a namespace

from tests.servers import listening, wait_until

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """A new network namespace starts with its loopback down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def status(url: str, body: bytes | None = None) -> int:
    request = urllib.request.Request(url, data=body, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except OSError:
        return 0


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    workdir = Path(spec["workdir"])
    loopback_up()
    server = [spec["redis_server"], "--port", "6379", "--bind", "127.0.0.1", "--save", ""]
    redis = subprocess.Popen(
        [*server, "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    procs: dict[str, subprocess.Popen[bytes]] = {}
    result: dict[str, Any] = {"probes": {}, "game": None, "exit": {}, "writes": {}, "logs": {}}
    try:
        with contextlib.suppress(AssertionError):  # the probes below tell what did not come up
            wait_until(lambda: listening(6379), 10)
        for process in spec["processes"]:
            log = (workdir / f"{process['name']}.out").open("wb")
            procs[process["name"]] = subprocess.Popen(
                [spec["python"], spec["hook"], *process["command"][1:]],
                env=process["env"],
                cwd=workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()

        def probed() -> bool:
            """Every probe's status now; whether all that must answer 200 do."""
            for process in spec["processes"]:
                for probe in process["probes"]:
                    url = f"http://127.0.0.1:{probe['port']}{probe['path']}"
                    result["probes"][f"{process['name']} {probe['kind']}"] = status(url)
            probes = result["probes"].items()
            return all(code == 200 or kind.endswith("control") for kind, code in probes)

        with contextlib.suppress(AssertionError):  # the result says which probe did not answer
            wait_until(probed, 60, every=0.2)
        body = json.dumps({"rules": "robbers", "seats": 2}).encode()
        result["game"] = status(f"http://127.0.0.1:{spec['api_port']}/api/games", body)
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for name, proc in procs.items():
            try:
                result["exit"][name] = proc.wait(spec["drain_seconds"] + 10)
            except subprocess.TimeoutExpired:
                proc.kill()
                result["exit"][name] = None
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        redis.terminate()
        redis.wait(10)
    for process in spec["processes"]:
        name = process["name"]
        written = Path(process["env"]["RO_LOG"])
        result["writes"][name] = written.read_text().splitlines() if written.exists() else []
        result["logs"][name] = (workdir / f"{name}.out").read_text(errors="replace")[-1500:]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
