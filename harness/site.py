"""The site file: a TOML description of the venue, validated before anything starts."""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import tomllib
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from harness.errors import Problem, SiteDeprecationWarning, SiteError

if TYPE_CHECKING:
    from runners import DeviceSettings, Transport

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Budget(_Strict):
    """Time allowed: per item from one rate key, plus setup and a hard hang limit."""

    realtime_factor: PositiveFloat | None = None
    chars_per_second: PositiveFloat | None = None
    ms_per_frame: PositiveFloat | None = None
    seconds: PositiveFloat | None = None
    setup_seconds: PositiveFloat = 120.0
    hang_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    scope: Literal["item", "set"] = "item"

    @model_validator(mode="after")
    def _one_rate(self) -> Budget:
        given = [k for k in RATE_KEYS if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of {', '.join(RATE_KEYS)}, not {' and '.join(given)}")
        return self


RATE_KEYS = ("realtime_factor", "chars_per_second", "ms_per_frame", "seconds")


class RunningScoreWeights(_Strict):
    """Points taken off the running score (docs/report.md): speed per unit of mean budget
    usage, the others per event per 100 items."""

    speed: Annotated[float, Field(ge=0)] = 10.0
    timeout: Annotated[float, Field(ge=0)] = 1.0
    crash: Annotated[float, Field(ge=0)] = 1.0
    restart: Annotated[float, Field(ge=0)] = 1.0
    # Off by default: an error reply or an invalid output already costs quality.
    error: Annotated[float, Field(ge=0)] = 0.0
    invalid_output: Annotated[float, Field(ge=0)] = 0.0


class SiteSection(_Strict):
    """[site]: the venue's name and where run directories go."""

    name: Annotated[str, Field(pattern=_NAME)]
    runs: str = "runs"
    fsync_seconds: Annotated[float, Field(ge=0)] = 0.05
    # How long a device that does not answer is waited for before its job gives up for
    # this session (left not done, never charged to the participant).
    device_wait_seconds: Annotated[float, Field(ge=0)] = 600.0
    running_score: RunningScoreWeights = RunningScoreWeights()
    # Where the run's records go: absent, the run directory's journal; a
    # postgresql:// DSN, a database that several operator stations share (docs/scale.md).
    store: str | None = None
    # The embargo on the test data: `onsite package` gives participants the references
    # and test inputs only after this day (docs/publishing.md). "2026-12-31" or a TOML date.
    release_after: datetime.date | None = None

    @field_validator("store")
    @classmethod
    def _postgresql_dsn(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises for a port that is not a number
        except ValueError as exc:
            raise ValueError(f"not a valid postgresql:// URL ({exc})") from None
        if parts.scheme not in ("postgresql", "postgres") or not parts.path.strip("/"):
            # The DSN itself is not repeated: it may carry a password.
            raise ValueError(
                "store must be a postgresql:// URL naming a database, e.g. "
                '"postgresql://onsite@db-host:5432/onsite" (leave the key out for the '
                "run directory's own journal)"
            )
        return value


class Audit(_Strict):
    """Integrity audits for a task (harness/engine/audits.py)."""

    repeats: Annotated[int, Field(ge=0)] = 0  # hidden repeated items per system
    perturb: bool = False  # dither repeated audio by +-1 LSB
    shuffle: bool = False  # send items in a secretly seeded order
    speedup_limit: Annotated[float, Field(gt=0, le=1)] = 0.5  # repeat faster than this: caching?
    agreement_tolerance: Annotated[float, Field(ge=0, le=1)] = 0.2  # perturbed repeats only


class Rules(_Strict):
    """Limits a system must keep to for a VALID verdict (harness/report/verdicts.py).

    None switches a rule off."""

    max_timeouts: Annotated[int, Field(ge=0)] | None = 0
    max_crashes: Annotated[int, Field(ge=0)] | None = 0
    max_invalid_outputs: Annotated[int, Field(ge=0)] | None = 0
    # Not judged unless a limit is given: an error reply or a late answer is already
    # charged to quality (no output) or to the set budget.
    max_errors: Annotated[int, Field(ge=0)] | None = None
    max_over_budget: Annotated[int, Field(ge=0)] | None = None


class TaskBase(_Strict):
    """The keys every task has; each kind adds its own options (harness/kinds/)."""

    kind: str
    testset: str
    budget: Budget = Budget()
    audit: Audit = Audit()
    rules: Rules = Rules()
    # The largest answer per item, in bytes; larger is invalid_output. Default: the kind's.
    max_output_bytes: Annotated[int, Field(ge=64)] | None = None
    description: str = ""
    # The tracks a system may enter for this task (e.g. ["closed", "open"]): when given,
    # every system on the task names one of them as its `track`.
    tracks: list[str] = []
    # The encoding of the test set's text files and references (scoring.charsets):
    # gbk, big5, utf-16le ...; None reads UTF-8 (and a CWMT XML file's declaration).
    encoding: str | None = None

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str | None) -> str | None:
        from scoring.charsets import codec_of

        if value is not None:
            codec_of(value)  # ValueError naming the accepted encodings
            value = value.strip().lower()
        return value


# --- task kinds: the site's task model is derived from the kind registry ---------------


def _task_models() -> dict[str, type[TaskBase]]:
    """One task model per registered kind: the common keys plus the kind's options."""
    from harness.kinds.registry import task_kinds

    models: dict[str, type[TaskBase]] = {}
    for name, kind in task_kinds().items():
        model = create_model(
            f"Task[{name}]",
            __base__=(kind.options, TaskBase),
            __doc__=f"A {name} task: {kind.summary or 'see docs/task-kinds.md'}.",
            kind=(cast(Any, Literal)[name], ...),
        )
        models[name] = cast(type[TaskBase], model)
    return models


TASK_MODELS = _task_models()

if TYPE_CHECKING:
    # What code can rely on for any task; a kind reads its own options from it.
    Task = TaskBase
else:
    Task = Annotated[Union[tuple(TASK_MODELS.values())], Field(discriminator="kind")]  # noqa: UP007


class System(_Strict):
    """One participant system: where it runs, which tasks, and how to start it."""

    device: str
    tasks: list[str]
    # What to start; a serial device runs its own agent, so there it may be left out.
    command: list[str] = []
    mode: Literal["serve", "exec"] = "serve"
    workdir: str | None = None
    env: dict[str, str] = {}
    max_restarts: Annotated[int, Field(ge=0)] = 20
    description: str = ""
    # Who entered the system (the team): one participant's systems are grouped, and
    # CWMT's rule of one primary and at most two contrastive runs is checked per team.
    # Left out, the system is its own participant.
    participant: Annotated[str, Field(min_length=1)] | None = None
    # The track it entered (one of each of its tasks' `tracks`), e.g. "closed" or "open".
    track: Annotated[str, Field(min_length=1)] | None = None
    # CWMT's run type: one primary run per participant and task, at most two contrastive.
    run_type: Literal["primary", "contrast"] | None = None
    # What the system used beyond the allowed list (data, tools): shown beside its results.
    declarations: str = ""

    @model_validator(mode="after")
    def _placeholders(self) -> System:
        joined = " ".join(self.command)
        has = "{input}" in joined and "{output}" in joined
        if self.mode == "exec" and not has:
            raise ValueError('exec mode needs "{input}" and "{output}" in command')
        if self.mode == "serve" and ("{input}" in joined or "{output}" in joined):
            raise ValueError('"{input}"/"{output}" placeholders belong to mode = "exec"')
        return self


class SiteFile(_Strict):
    """The whole file, as written.

    ``devices`` holds each transport's own settings model (runners.DeviceSettings); the
    model that validates them is built from the transport registry on first use
    (:func:`site_file_model`), so that code which never loads a site file (``onsite
    score``) does not import the transports.
    """

    site: SiteSection
    devices: dict[str, Any]
    tasks: dict[str, Task]
    systems: dict[str, System]

    @model_validator(mode="after")
    def _tracks_and_run_types(self) -> SiteFile:
        for name, system in self.systems.items():
            for task in system.tasks:
                cfg = self.tasks.get(task)
                if cfg is None or not cfg.tracks:
                    continue
                if system.track not in cfg.tracks:
                    given = f"track {system.track!r}" if system.track else "no track"
                    raise ValueError(
                        f"systems.{name}: {given}, but task {task!r} has tracks "
                        f"{cfg.tracks}: set track = one of them"
                    )
        # CWMT: per participant and task, one primary run and at most two contrastive.
        for task in self.tasks:
            runs: dict[str, dict[str, list[str]]] = {}
            for name, system in self.systems.items():
                if task in system.tasks and system.run_type is not None:
                    team = runs.setdefault(system.participant or name, {})
                    team.setdefault(system.run_type, []).append(name)
            for team_name, kinds in runs.items():
                primary, contrast = kinds.get("primary", []), kinds.get("contrast", [])
                if len(primary) > 1 or len(contrast) > 2:
                    raise ValueError(
                        f"participant {team_name!r} on task {task!r}: {len(primary)} primary "
                        f"run(s) ({', '.join(primary) or '-'}) and {len(contrast)} contrastive "
                        f"({', '.join(contrast) or '-'}); CWMT allows one primary and at most "
                        "two contrastive runs per participant and task: change run_type"
                    )
        return self

    @field_validator("devices", "tasks", "systems")
    @classmethod
    def _names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not re.match(_NAME, name):
                raise ValueError(
                    f"name {name!r} must start with a letter or digit and use only "
                    "letters, digits, '.', '_' and '-'"
                )
        return value


@dataclass(frozen=True)
class Site:
    """A validated site with every path resolved against the site file's directory."""

    path: Path
    config: SiteFile
    digest: str
    base: Path | None = None  # where relative paths start, when not beside the file

    @property
    def name(self) -> str:
        """The site's name, also the run directory's name."""
        return self.config.site.name

    @property
    def root(self) -> Path:
        """The directory relative paths start from: normally the site file's own."""
        return self.base or self.path.parent

    @property
    def run_dir(self) -> Path:
        """runs/<site name>/ relative to the site file."""
        return (self.root / self.config.site.runs / self.name).resolve()

    def testset_path(self, task: str) -> Path:
        """The task's test-set directory."""
        return (self.root / self.config.tasks[task].testset).resolve()

    def workdir(self, system: str) -> Path:
        """The directory a system's command runs in (default: the site file's directory)."""
        workdir = self.config.systems[system].workdir
        return (self.root / workdir).resolve() if workdir else self.root

    def device(self, name: str) -> DeviceSettings:
        """A device's validated settings, with file paths resolved against the site file."""
        settings: DeviceSettings = self.config.devices[name]
        return settings.resolved(self.root)

    def device_options(self, name: str) -> dict[str, Any]:
        """A device's resolved settings as plain values (paths as strings), for people and
        JSON; runners take :meth:`device`."""
        return self.device(name).model_dump(mode="json")

    def participant(self, system: str) -> str:
        """Who entered the system: its `participant`, or its own name when none is given."""
        return self.config.systems[system].participant or system

    def jobs(self) -> list[tuple[str, str]]:
        """Every (task, system) pair to run, in the order the site file lists them."""
        return [
            (task, system)
            for task in self.config.tasks
            for system, cfg in self.config.systems.items()
            if task in cfg.tasks
        ]


def _line_of(text: str, loc: tuple[str | int, ...]) -> int | None:
    """Best-effort line number of a dotted key in TOML text (tomllib keeps none)."""
    lines = text.splitlines()
    start = 0
    for depth in range(len(loc), 0, -1):
        header = ".".join(str(p) for p in loc[:depth])
        quoted = ".".join(
            f'"{p}"' if not re.match(r"^[A-Za-z0-9_-]+$", str(p)) else str(p) for p in loc[:depth]
        )
        for i, line in enumerate(lines):
            stripped = line.strip()
            if stripped in (f"[{header}]", f"[{quoted}]"):
                start = i
                rest = loc[depth:]
                if not rest:
                    return i + 1
                key = str(rest[0])
                for j in range(i + 1, len(lines)):
                    s = lines[j].strip()
                    if s.startswith("["):
                        break
                    if re.match(rf'^"?{re.escape(key)}"?\s*=', s):
                        return j + 1
                return i + 1
    if loc:
        key = str(loc[-1])
        for i in range(start, len(lines)):
            if re.match(rf'^\s*"?{re.escape(key)}"?\s*=', lines[i]):
                return i + 1
    return None


_FIXES = {
    "extra_forbidden": "remove it or correct its spelling",
    "missing": "add it",
    "literal_error": "use one of the values listed",
    "greater_than": "use a larger number",
    "greater_than_equal": "use a larger number",
    "less_than": "use a smaller number",
    "less_than_equal": "use a smaller number",
    "finite_number": "use a finite number (not inf or nan)",
    "too_short": "give at least one value",
    "too_long": "give fewer values",
    "string_pattern_mismatch": "use only letters, digits, '.', '_' and '-' (start with a "
    "letter or digit)",
    "int_type": "write a whole number",
    "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "float_type": "write a number",
    "float_parsing": "write a number",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "string_type": 'write a quoted string, e.g. "text"',
    "list_type": 'write a list, e.g. ["a", "b"]',
    "dict_type": "write a table, e.g. { key = 1 }",
    "model_type": "write a table, e.g. { key = 1 }",
    "value_error": "see docs/site-file.md for what this key accepts",
}

_ALLOWED: dict[str, type[BaseModel]] = {
    "site": SiteSection,
    "budget": Budget,
    "audit": Audit,
    "rules": Rules,
    "running_score": RunningScoreWeights,
}


# --- devices: everything about them comes from the transport registry (runners.registry) ---


def site_file_model() -> type[SiteFile]:
    """SiteFile with ``[devices]`` validated as a union of every registered transport's
    settings, told apart by ``transport``."""
    return _site_file_model(tuple(t.settings for t in transports()))


@cache
def _site_file_model(models: tuple[type[DeviceSettings], ...]) -> type[SiteFile]:
    # Built at run time from what is registered, so the type checker cannot see the union.
    device: Any = Annotated[Union[models], Field(discriminator="transport")]  # noqa: UP007
    model: type[SiteFile] = create_model(
        "SiteFile", __base__=SiteFile, devices=(dict[str, device], ...)
    )
    return model


def _device_models() -> dict[str, type[DeviceSettings]]:
    return {t.name: t.settings for t in transports()}


def transports() -> list[Transport[Any]]:
    """The registered transports (imported on first use: see SiteFile)."""
    from runners import transports as registered

    return registered()


def transport(name: str) -> Transport[Any]:
    """The transport of that name, as the site validated it."""
    from runners import transport as lookup

    return lookup(name)


# --- old spellings: still read, with a warning that names the line and the fix ---


def _old_spellings(
    path: Path, text: str, data: dict[str, Any], warn: bool
) -> tuple[frozenset[str], list[Problem]]:
    """Rewrite each device's ``kind`` (the old name of its ``transport``) in ``data``.

    Returns the devices whose transport came from ``kind`` (their errors name the key the
    file has) and the devices that give both keys (an error each). ``warn``: each old
    spelling also raises a SiteDeprecationWarning naming the line and the fix.
    """
    devices = data.get("devices")
    if not isinstance(devices, dict):
        return frozenset(), []
    renamed: set[str] = set()
    problems: list[Problem] = []
    for name, table in devices.items():
        if not isinstance(table, dict) or "kind" not in table:
            continue
        loc = ("devices", name, "kind")
        where, line = ".".join(loc), _line_of(text, loc)
        if "transport" in table:
            del table["kind"]
            problems.append(
                Problem(
                    path,
                    where,
                    f"device {name!r} gives both `transport` and `kind` (the old name of "
                    "`transport`)",
                    "remove `kind`",
                    line,
                )
            )
            continue
        value = table.pop("kind")
        table["transport"] = value
        renamed.add(name)
        if warn:
            written = json.dumps(value, ensure_ascii=False)
            notice = Problem(
                path,
                where,
                "`kind` is the old name of a device's `transport` (deprecated: still read for now)",
                f"write `transport = {written}` in place of `kind = {written}`",
                line,
            )
            warnings.warn(SiteDeprecationWarning(notice), stacklevel=3)
    return frozenset(renamed), problems


# --- the rest of the file ---


def _task_tag(loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], str | None]:
    """pydantic puts a task's kind (the union's tag) into the path: not a key the user
    wrote. The path without it, and the kind."""
    if len(loc) >= 3 and loc[0] == "tasks" and loc[2] in TASK_MODELS:
        return loc[:2] + loc[3:], str(loc[2])
    return loc, None


def _unknown_task_kind(path: Path, text: str, err: Any) -> Problem:
    loc = (*err["loc"], "kind")
    got = err.get("ctx", {}).get("tag")
    return Problem(
        path,
        ".".join(str(p) for p in loc),
        f"unknown task kind {got!r}" if got else "the task has no kind",
        f"use one of: {', '.join(TASK_MODELS)} (docs/task-kinds.md)",
        _line_of(text, loc),
    )


def _problem(path: Path, text: str, err: Any, old_spelling: frozenset[str]) -> Problem:
    if err["type"] in ("union_tag_invalid", "union_tag_not_found") and err["loc"][:1] == ("tasks",):
        return _unknown_task_kind(path, text, err)
    loc, task_kind = _task_tag(tuple(err["loc"]))
    task_model = TASK_MODELS[task_kind] if task_kind else None
    device_models = _device_models()
    device_model = None
    if len(loc) >= 3 and loc[0] == "devices" and loc[2] in device_models:
        # pydantic puts the transport (the union's tag) into the path: not a key the user wrote.
        device_model = device_models[str(loc[2])]
        loc = loc[:2] + loc[3:]
    error = err["type"]
    if error in ("union_tag_invalid", "union_tag_not_found"):
        # The key the file has: `kind` where it still uses the old spelling.
        loc = (*loc, "kind" if len(loc) >= 2 and loc[1] in old_spelling else "transport")
        known = ", ".join(device_models)
        got = err.get("ctx", {}).get("tag")
        message = f"unknown transport {got!r}" if got else "the device names no transport"
        return Problem(
            path,
            ".".join(str(p) for p in loc),
            message,
            f"use one of: {known}" if got else f"add transport = one of: {known}",
            _line_of(text, loc),
        )
    dotted = ".".join(str(p) for p in loc)
    message = err["msg"]
    fix = _FIXES.get(error, "see docs/site-file.md for what this key accepts")
    if error == "extra_forbidden":
        parent = str(loc[-2]) if len(loc) >= 2 else ""
        # A key of the task itself is checked against its kind's model; nested tables
        # (budget, audit, rules) against their own.
        task_keys = task_model if len(loc) == 3 else None
        model = device_model or task_keys or _model_for(loc[:-1])
        message = f"unknown key {loc[-1]!r}"
        if task_kind and len(loc) == 3:
            message += f" for kind {task_kind!r}"
        if model is not None:
            fix = (
                f"remove it or correct its spelling; allowed keys: {', '.join(model.model_fields)}"
            )
        elif parent:
            fix = "remove it or correct its spelling"
    elif error == "missing":
        message = f"required key {loc[-1]!r} is missing"
    elif message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
    elif isinstance(err.get("input"), str | int | float | bool):
        message = f"{message} (got {err['input']!r})"
    return Problem(path, dotted, message, fix, _line_of(text, loc))


def _model_for(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that validates the table at loc, to list its allowed keys."""
    if not loc:
        return SiteFile
    top = loc[0]
    if len(loc) == 1:
        return _ALLOWED.get(str(top))
    if top == "site" and len(loc) == 2:
        return _ALLOWED.get(str(loc[1]))
    if top == "tasks":
        return _ALLOWED.get(str(loc[2])) if len(loc) == 3 else None
    if top == "systems" and len(loc) == 2:
        return System
    return None


def load_site(path: str | Path, base: Path | None = None, raw: bytes | None = None) -> Site:
    """Read and validate a site file, or raise SiteError listing every problem found.

    ``base`` resolves relative paths from another directory: a run directory's
    copy of a site file still means the paths of the original. ``raw``: the file's
    bytes, when they are kept elsewhere than at ``path`` (a run in PostgreSQL).

    An old spelling (a device's ``kind``, now ``transport``) is read as the new one, with a
    SiteDeprecationWarning naming the line and the fix; a run's recorded copy (``base``
    given) is read without it: it records what was written, it is not a file to correct.
    """
    path = Path(path).resolve()
    try:
        raw = path.read_bytes() if raw is None else raw
    except OSError as exc:
        raise SiteError(
            [Problem(path, "", f"cannot read the site file ({exc.strerror})", "check the path")]
        ) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SiteError(
            [Problem(path, "", "the site file is not UTF-8", "save it as UTF-8", line)]
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        raise SiteError(
            [
                Problem(
                    path,
                    "",
                    f"not valid TOML: {exc}",
                    "correct the TOML syntax",
                    int(match.group(1)) if match else None,
                )
            ]
        ) from exc
    old_spelling, both = _old_spellings(path, text, data, warn=base is None)
    try:
        config = site_file_model().model_validate(data)
    except ValidationError as exc:
        raise SiteError(
            both + [_problem(path, text, err, old_spelling) for err in exc.errors()]
        ) from exc
    if both:
        raise SiteError(both)
    site = Site(path, config, hashlib.sha256(raw).hexdigest(), base)
    problems = _cross_check(site, text)
    if problems:
        raise SiteError(problems)
    return site


def _writes_files(kind: str) -> bool:
    """True for kinds whose systems answer with a file (tts): not over a serial line."""
    from harness.kinds.registry import task_kind

    return bool(task_kind(kind).output_files)


def _reads_encodings(kind: str) -> bool:
    """The kind's loader reads its test set in the task's ``encoding``."""
    from harness.kinds.registry import task_kind

    return task_kind(kind).text_encodings


def _cross_check(site: Site, text: str) -> list[Problem]:
    """References between tables, and files that must exist."""
    cfg = site.config
    problems: list[Problem] = []

    def add(loc: tuple[str, ...], message: str, fix: str) -> None:
        problems.append(Problem(site.path, ".".join(loc), message, fix, _line_of(text, loc)))

    for name, system in cfg.systems.items():
        device = cfg.devices.get(system.device)
        found = transport(device.transport) if device is not None else None
        if not system.command and (found is None or found.needs_command):
            add(
                ("systems", name),
                "required key 'command' is missing",
                'add it, e.g. command = ["python", "-m", "my_system"]',
            )
        if system.device not in cfg.devices:
            add(
                ("systems", name, "device"),
                f"unknown device {system.device!r}",
                f"define [devices.{system.device}] or use one of: {', '.join(cfg.devices) or '-'}",
            )
        elif found is not None and system.mode not in found.modes:
            add(
                ("systems", name, "mode"),
                f"mode {system.mode!r} is not supported on {found.name} devices",
                f"use mode = one of: {', '.join(sorted(found.modes))}",
            )
        for task in system.tasks:
            if task not in cfg.tasks:
                add(
                    ("systems", name, "tasks"),
                    f"unknown task {task!r}",
                    f"define [tasks.{task}] or use one of: {', '.join(cfg.tasks) or '-'}",
                )
            elif (
                _writes_files(cfg.tasks[task].kind)
                and found is not None
                and not found.returns_files
            ):
                # The device protocol has no frames for a file going upstream.
                able = [t.name for t in transports() if t.returns_files]
                add(
                    ("systems", name, "tasks"),
                    f"task {task!r} is {cfg.tasks[task].kind}, whose systems write files, "
                    f"which runs on {' and '.join(able)} devices only (the files cannot be "
                    f"fetched back from a {found.name} device)",
                    f"run this system on a {' or '.join(able)} device (docs/judging.md, section 5)",
                )
        if not system.tasks:
            add(("systems", name, "tasks"), "the system has no tasks", "list at least one task")
        workdir = site.workdir(name)
        if not workdir.is_dir():
            add(
                ("systems", name, "workdir"),
                f"directory {workdir} does not exist",
                "create it or correct the path (relative to the site file)",
            )
    for name in cfg.tasks:
        testset = site.testset_path(name)
        if not testset.is_dir():
            add(
                ("tasks", name, "testset"),
                f"test-set directory {testset} does not exist",
                "correct the path; it is relative to the site file",
            )
        if cfg.tasks[name].encoding is not None and not _reads_encodings(cfg.tasks[name].kind):
            from harness.kinds.registry import task_kinds

            reading = [k for k in sorted(task_kinds()) if _reads_encodings(k)]
            add(
                ("tasks", name, "encoding"),
                f"a {cfg.tasks[name].kind} test set is read as UTF-8 only (JSON and lists)",
                f"remove the key and re-save the files as UTF-8; the kinds that read "
                f"other encodings: {', '.join(reading)}",
            )
    for name in cfg.devices:
        for problem in site.device(name).problems():
            add(("devices", name, problem.key), problem.message, problem.fix)
    return problems
