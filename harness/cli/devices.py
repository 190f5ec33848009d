"""`onsite devices`: list serial ports and probe each with HELLO; `onsite devices
conformance PORT` checks every clause of the serial protocol against one device."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console


def add_devices_parser(sub: Any) -> None:
    """Register `onsite devices` on the CLI's subparsers."""
    devices = sub.add_parser("devices", help="list serial ports and probe them with HELLO")
    devices.add_argument("--port", action="append", default=[], help="probe this port (or URL)")
    devices.add_argument("--baud", type=int, default=115200)
    devices.add_argument("--timeout", type=float, default=3.0, help="seconds to wait per port")
    devices.add_argument(
        "action", nargs="?", choices=["conformance"], help="conformance: check every clause"
    )
    devices.add_argument("target", nargs="?", metavar="PORT", help="the port to check")
    devices.add_argument(
        "--item-timeout", type=float, default=30.0, help="conformance: seconds per answer"
    )
    devices.set_defaults(handler=cmd_devices)


def cmd_devices(args: argparse.Namespace, console: Console) -> int:
    """List serial ports and probe each (or the given ones) with HELLO.

    Exit 0 when the listing worked, whatever answered; 1 when a port named with
    ``--port`` does not answer.
    """
    from harness.cli.terminal import table
    from runners import list_serial_ports, probe_serial_port

    if args.action is not None:
        return cmd_devices_conformance(args, console)
    ports = list(args.port) or [p.device for p in list_serial_ports()]
    if not ports:
        console.print("no serial ports found; give one with --port PATH", markup=False)
        return EXIT_OK
    descriptions = {p.device: p.description for p in list_serial_ports()}
    rows = []
    for port in ports:
        result = probe_serial_port(port, args.baud, args.timeout)
        if result.ready is not None:
            ready = result.ready
            found = f"{ready.name} {ready.software}"
            rates = ", ".join(str(r) for r in ready.sample_rates)
            rtt = f"{1000 * result.round_trip_seconds:.1f}" if result.round_trip_seconds else "-"
            detail = f"max input {ready.max_input} B; rates {rates} Hz; ping {rtt} ms"
        else:
            found, detail = "no answer", result.error
        rows.append((port, descriptions.get(port, ""), found, detail))
    console.print(table("Serial devices", ("port", "description", "device", "detail"), rows))
    # A listed port that is silent is no failure (every PC lists its built-in UART, with
    # nothing attached); a port the operator named with --port must answer.
    named = set(args.port)
    silent = [r[0] for r in rows if r[0] in named and r[2] == "no answer"]
    return EXIT_FAILED if silent else EXIT_OK


def cmd_devices_conformance(args: argparse.Namespace, console: Console) -> int:
    """`onsite devices conformance PORT`: every protocol clause against one device."""
    from harness.cli.terminal import table
    from runners import check_device_conformance

    if args.action != "conformance" or not args.target:
        console.print("usage: onsite devices conformance PORT [--baud N]", markup=False)
        return EXIT_FAILED
    results = check_device_conformance(args.target, args.baud, args.item_timeout)
    rows = [(f"§{r.section}", r.clause, "pass" if r.passed else "FAIL", r.detail) for r in results]
    title = f"Protocol conformance of {args.target} at {args.baud} baud"
    console.print(table(title, ("section", "clause", "result", "detail"), rows))
    failed = sum(not r.passed for r in results)
    console.print(f"{len(results) - failed} of {len(results)} clauses pass", markup=False)
    return EXIT_OK if failed == 0 else EXIT_FAILED
