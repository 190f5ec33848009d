"""The key of a published run: each system's number ("System k"), and the names that
must never reach a published file.

The numbers are drawn once per run and flag set: in a seeded random order of every
system of the site (`--seed`, default :data:`DEFAULT_SEED`), or by rank (`--order rank`:
the systems of the site's first task best first, then those of the next task not yet
numbered, ...). A track filter never renumbers: System 3 is the same system in every
table, package and key made with the same seed and order.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from harness.leaderboard import LeaderboardRow
    from harness.site import Site

# The documented default: a key made without --seed is the same on every machine, and
# so is the order anyone who knows the site's system names can draw with it. An
# organizer who publishes before telling each team its number gives a seed of their own.
DEFAULT_SEED = 2005

Order = Literal["seeded", "rank"]
ORDERS: tuple[str, ...] = ("seeded", "rank")


@dataclass(frozen=True)
class KeyEntry:
    """One system's number, with who entered it (kept beside the package, never in it)."""

    number: int
    system: str
    participant: str

    @property
    def label(self) -> str:
        """The name published tables use: "System 3"."""
        return f"System {self.number}"


@dataclass(frozen=True)
class Key:
    """Every system's number, and how the numbers were drawn."""

    order: Order
    seed: int
    entries: tuple[KeyEntry, ...]

    def label(self, system: str) -> str:
        """The published name of a system of the site."""
        return self.by_system()[system].label

    def number(self, system: str) -> int:
        """The published number of a system of the site."""
        return self.by_system()[system].number

    def by_system(self) -> dict[str, KeyEntry]:
        """The entries by system name."""
        return {e.system: e for e in self.entries}

    def to_dict(self, run: str) -> dict[str, Any]:
        """JSON-ready, with the run it numbers and how to draw it again."""
        return {
            "run": run,
            "order": self.order,
            "seed": self.seed,
            "systems": [
                {
                    "label": e.label,
                    "number": e.number,
                    "system": e.system,
                    "participant": e.participant,
                }
                for e in self.entries
            ],  # fmt: skip
        }


def key_path(out: Path) -> Path:
    """Where the key of a package written to ``out`` goes: beside it, never inside it
    (``results/`` -> ``results.key.json``)."""
    out = out.resolve()
    return out.with_name(out.name + ".key.json")


def write_key(key: Key, out: Path, run: str) -> Path:
    """Write the key beside ``out`` (readable by its owner only) and return its path."""
    path = key_path(out)
    path.write_text(json.dumps(key.to_dict(run), indent=2, ensure_ascii=False) + "\n", "utf-8")
    path.chmod(0o600)
    return path


def _seeded(names: Sequence[str], seed: int) -> list[str]:
    # Sorted first: the site file's order (often the order teams registered in) must
    # not show through the draw.
    drawn = sorted(names)
    random.Random(seed).shuffle(drawn)
    return drawn


def _ranked(site: Site, rows: Iterable[LeaderboardRow], seed: int) -> list[str]:
    """Best first on the site's first task, then the next task's systems not yet placed;
    equal scores are broken by the seeded draw, never by the names."""
    draw = {name: k for k, name in enumerate(_seeded(list(site.config.systems), seed))}
    by_task: dict[str, list[LeaderboardRow]] = {}
    for row in rows:
        by_task.setdefault(row.task, []).append(row)
    placed: list[str] = []
    for task in site.config.tasks:

        def order(row: LeaderboardRow) -> tuple[bool, float, int]:
            if row.score is None:
                return (True, 0.0, draw[row.system])
            score = -row.score if row.higher_is_better else row.score
            return (False, score, draw[row.system])

        for row in sorted(by_task.get(task, []), key=order):
            if row.system not in placed:
                placed.append(row.system)
    rest = sorted((s for s in site.config.systems if s not in placed), key=draw.__getitem__)
    return placed + rest


def make_key(
    site: Site, rows: Iterable[LeaderboardRow], order: Order = "seeded", seed: int | None = None
) -> Key:
    """Number every system of the site. ``rows`` is the whole run's leaderboard (every
    track): ``rank`` order reads its scores."""
    seed = DEFAULT_SEED if seed is None else seed
    names = (
        _ranked(site, rows, seed) if order == "rank" else _seeded(list(site.config.systems), seed)
    )
    entries = tuple(
        KeyEntry(number=k, system=name, participant=site.participant(name))
        for k, name in enumerate(names, start=1)
    )
    return Key(order=order, seed=seed, entries=entries)


# ---------------------------------------------------------------------- what is secret


@dataclass(frozen=True)
class Secret:
    """A word of the site file that identifies a system, a team or the venue."""

    text: str
    where: str  # the site file's key it comes from, e.g. "systems.alpha.command"


def _words(value: Any) -> list[str]:
    """The strings of a site value, each also by its last path component."""
    if isinstance(value, str):
        out = [value.strip()]
        tail = re.split(r"[/\\]", value.strip().rstrip("/\\"))[-1]
        if tail and tail != out[0]:
            out.append(tail)
        return out
    if isinstance(value, Mapping):
        return [w for v in value.values() for w in _words(v)]
    if isinstance(value, list | tuple):
        return [w for v in value for w in _words(v)]
    return []


# The device keys that name a machine, an account or what runs there (a transport's
# other keys are settings: a baud rate, a reset line, "none").
_DEVICE_NAMING = frozenset(
    ("host", "user", "port", "key", "known_hosts", "workdir", "cwd", "command", "emulate",
     "emulate_command", "emulate_args")
)  # fmt: skip


def secrets(site: Site) -> list[Secret]:
    """Every name a published file must not hold: the systems, the participants, the
    devices and what the site file sets on them (hosts, users, ports, commands), and each
    system's command, working directory and description."""
    out: list[Secret] = []
    cfg = site.config
    for name, system in cfg.systems.items():
        out.append(Secret(name, f"systems.{name}"))
        if system.participant:
            out.append(Secret(system.participant, f"systems.{name}.participant"))
        for key in ("command", "workdir", "description"):
            for word in _words(getattr(system, key, None)):
                out.append(Secret(word, f"systems.{name}.{key}"))
    for name, device in cfg.devices.items():
        out.append(Secret(name, f"devices.{name}"))
        given = device.model_dump(exclude_unset=True)
        for key, value in given.items():
            if key in _DEVICE_NAMING:
                out.extend(Secret(w, f"devices.{name}.{key}") for w in _words(value))
    return [s for s in out if s.text]


def public_words(site: Site, rows: Iterable[LeaderboardRow]) -> set[str]:
    """What the published tables name on purpose (tasks, kinds, tracks, run types,
    metrics): a secret equal to one of them cannot be told apart, and is not looked for."""
    cfg = site.config
    words = {"system", "primary", "contrast"}
    words |= {t.lower() for t in cfg.tasks} | {t.kind.lower() for t in cfg.tasks.values()}
    words |= {tr.lower() for t in cfg.tasks.values() for tr in getattr(t, "tracks", [])}
    for row in rows:
        words |= {row.metric.lower(), row.speed_unit.lower()}
        words |= {w.lower() for w in (row.track, row.run_type) if w}
    return words


def _pattern(text: str) -> re.Pattern[bytes]:
    # A whole word only: a system named "base" is not found in "database".
    return re.compile(
        rb"(?<![A-Za-z0-9_])" + re.escape(text.encode("utf-8")) + rb"(?![A-Za-z0-9_])",
        re.IGNORECASE,
    )


def searched(secret_list: Iterable[Secret], public: set[str]) -> list[Secret]:
    """The secrets worth looking for: three characters or more, not a number, not a
    word the tables name on purpose."""
    return [
        s
        for s in secret_list
        if len(s.text) >= 3 and not s.text.isdigit() and s.text.lower() not in public
    ]


def redact(text: str, key: Key, secret_list: Iterable[Secret]) -> str:
    """Free text of the site file (a declaration) with every secret replaced: a system's
    name by its "System k", anything else by "[withheld]". Longer secrets go first, so
    a command line is replaced whole before its words."""
    labels = {e.system: e.label for e in key.entries}
    for secret in sorted(secret_list, key=lambda s: -len(s.text)):
        if not secret.text.strip():
            continue
        replacement = labels.get(secret.text, "[withheld]")
        pattern = re.compile(
            r"(?<![A-Za-z0-9_])" + re.escape(secret.text) + r"(?![A-Za-z0-9_])", re.IGNORECASE
        )
        text = pattern.sub(replacement, text)
    return text


@dataclass(frozen=True)
class Leak:
    """A secret found in a file meant for publication."""

    path: Path
    secret: Secret


def find_leaks(root: Path, secret_list: Iterable[Secret]) -> list[Leak]:
    """Every (file, secret) where a file under ``root`` holds a secret, byte for byte
    (case-insensitive, as a whole word)."""
    patterns = [(s, _pattern(s.text)) for s in secret_list]
    leaks: list[Leak] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        leaks.extend(Leak(path, s) for s, pattern in patterns if pattern.search(data))
        # A file's own name is published too.
        name = str(path.relative_to(root)).encode("utf-8")
        leaks.extend(Leak(path, s) for s, pattern in patterns if pattern.search(name))
    return leaks
