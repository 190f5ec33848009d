"""What running a system over SSH costs, against the local runner and scp in the same run.

Starts its own OpenSSH server on 127.0.0.1 (as tests/sshd.py does for the
tests) and logs into this machine, so the figures are the SSH runner's own
cost with a near-zero network round trip.

Figures:
- per-item time of the null system (examples/systems/null_system.py): the
  wall time of one run_item (staging, exchange, clean-up, measurement) and the
  exchange alone (item sent -> answer read), p50 over SSH vs LocalServeRunner;
  rounds alternate between the two so that machine load hits both alike;
- staging throughput: the runner's SFTP upload (paramiko) vs OpenSSH's scp of
  the same files to the same server, MB/s each and their ratio.

Run: `.venv/bin/python benchmarks/ssh_overhead.py [--items N] [--mb M]` (needs openssh-server).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runners import ItemRequest, LocalServeRunner, Runner, SshServeRunner, SystemSpec  # noqa: E402
from runners.ssh_link import SshDevice, connect  # noqa: E402
from tests.sshd import Sshd, start_sshd  # noqa: E402

NULL_MODULE = "examples.systems.null_system"


def spec(root: Path, name: str, command: tuple[str, ...]) -> SystemSpec:
    return SystemSpec(
        name=name,
        task="bench",
        kind="asr",
        mode="serve",
        command=command,
        workdir=REPO,
        log_path=root / "logs" / f"{name}.log",
        stage_dir=root / "stage" / name,
    )


def item_times(runner: Runner, audio: Path, items: int, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """Wall seconds of each run_item, and each exchange's seconds, for `items` items."""
    wall = np.empty(items)
    exchange = np.empty(items)
    for i in range(items):
        request = ItemRequest(f"{tag}{i:012x}", {"audio": audio}, {"sample_rate": 16000}, 10.0)
        t0 = time.perf_counter()
        attempt = runner.run_item(request)
        wall[i] = time.perf_counter() - t0
        exchange[i] = attempt.seconds
        if attempt.outcome != "result":
            raise RuntimeError(f"{tag}: item {i}: {attempt.outcome}: {attempt.message}")
    return wall, exchange


def bench_items(server: Sshd, root: Path, items: int, rounds: int) -> dict[str, np.ndarray]:
    audio = root / "item.wav"
    soundfile.write(audio, np.zeros(16000, dtype=np.int16), 16000, "PCM_16")
    local = LocalServeRunner(spec(root, "local", (sys.executable, "-m", NULL_MODULE)))
    # The remote side runs in its own workdir; the module is found by changing to the repo.
    remote_cmd = (
        f"cd {shlex.quote(str(REPO))} && exec {shlex.quote(sys.executable)} -m {NULL_MODULE}"
    )
    ssh = SshServeRunner(
        spec(root, "ssh", ("sh", "-c", remote_cmd)),
        server.options(workdir=str(root / "remote")),
    )
    times: dict[str, list[np.ndarray]] = {k: [] for k in ("local", "ssh", "local_x", "ssh_x")}
    with local, ssh:
        local.start()
        ssh.start()
        item_times(local, audio, min(items, 50), "warm")
        item_times(ssh, audio, min(items, 50), "warm")
        per_round = max(1, items // rounds)
        for r in range(rounds):
            for name, runner in (("local", local), ("ssh", ssh)):
                wall, exchange = item_times(runner, audio, per_round, f"{name}{r}x")
                times[name].append(wall)
                times[f"{name}_x"].append(exchange)
        rtt = ssh.round_trip_seconds
    result = {k: np.concatenate(v) for k, v in times.items()}
    result["rtt"] = np.array([rtt if rtt is not None else np.nan])
    return result


def bench_staging(server: Sshd, root: Path, megabytes: int, files: int) -> tuple[float, float]:
    """MB/s of paramiko SFTP uploads (as the runner stages) and of scp, same files, same server."""
    source = root / "payload"
    source.mkdir()
    rng = np.random.default_rng(0)
    size = megabytes * 1024 * 1024 // files
    paths = []
    for i in range(files):
        path = source / f"f{i}.bin"
        path.write_bytes(rng.bytes(size))
        paths.append(path)
    total_mb = size * files / 1e6

    sftp_dir = root / "sftp_target"
    sftp_dir.mkdir()
    client, _ = connect(SshDevice.model_validate(server.options()), 5.0)
    try:
        sftp = client.open_sftp()
        t0 = time.perf_counter()
        for path in paths:
            sftp.put(str(path), str(sftp_dir / path.name), confirm=False)
        sftp_seconds = time.perf_counter() - t0
        sftp.close()
    finally:
        client.close()

    scp_dir = root / "scp_target"
    scp_dir.mkdir()
    known = root / "known_hosts"
    known.write_text(f"[127.0.0.1]:{server.port} {server.host_key_line}\n")
    command = [
        "scp",
        "-q",
        "-B",
        "-P",
        str(server.port),
        "-i",
        str(server.user_key),
        "-o",
        f"UserKnownHostsFile={known}",
        "-o",
        "StrictHostKeyChecking=yes",
        *(str(p) for p in paths),
        f"{server.user}@127.0.0.1:{scp_dir}/",
    ]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    scp_seconds = time.perf_counter() - t0
    for path in paths:
        if (sftp_dir / path.name).stat().st_size != size or (
            scp_dir / path.name
        ).stat().st_size != size:
            raise RuntimeError(f"{path.name}: copy has the wrong size")
    return total_mb / sftp_seconds, total_mb / scp_seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000, help="items per runner (default 1000)")
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds (default 10)")
    parser.add_argument("--mb", type=int, default=64, help="MB to stage (default 64)")
    parser.add_argument("--files", type=int, default=8, help="files the MB are split into")
    args = parser.parse_args()
    if shutil.which("scp") is None:
        sys.exit("scp not found: install openssh-client")
    with tempfile.TemporaryDirectory(prefix="onsite-ssh-bench-") as tmp:
        root = Path(tmp)
        server = start_sshd(root / "sshd")
        try:
            t = bench_items(server, root, args.items, args.rounds)
            sftp_mbs, scp_mbs = bench_staging(server, root, args.mb, args.files)
        finally:
            server.stop()
    p50 = {k: float(np.median(v)) * 1e3 for k, v in t.items() if k != "rtt"}
    p90 = {k: float(np.percentile(v, 90)) * 1e3 for k, v in t.items() if k != "rtt"}
    n = len(t["ssh"])
    print(f"ssh runner overhead, null system, {n} items per runner, {os.cpu_count()} CPUs")
    print(f"  link round trip (SFTP stat)      {t['rtt'][0] * 1e3:8.3f} ms")
    print("  per item (run_item wall time)     p50 ms   p90 ms")
    print(f"    local                          {p50['local']:7.3f}  {p90['local']:7.3f}")
    print(f"    ssh                            {p50['ssh']:7.3f}  {p90['ssh']:7.3f}")
    print(f"    ratio ssh/local (p50)          {p50['ssh'] / p50['local']:7.2f}x")
    print("  exchange only (sent -> answer)")
    print(f"    local                          {p50['local_x']:7.3f}  {p90['local_x']:7.3f}")
    print(f"    ssh                            {p50['ssh_x']:7.3f}  {p90['ssh_x']:7.3f}")
    print(f"    ratio ssh/local (p50)          {p50['ssh_x'] / p50['local_x']:7.2f}x")
    print(f"staging {args.mb} MB in {args.files} files")
    print(f"  runner SFTP (paramiko)           {sftp_mbs:8.1f} MB/s")
    print(f"  scp (OpenSSH)                    {scp_mbs:8.1f} MB/s")
    print(f"  ratio SFTP/scp                   {sftp_mbs / scp_mbs:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
