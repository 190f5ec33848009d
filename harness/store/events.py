"""The events of a run: one model per journal record, and what listeners receive.

Each journal record type is a frozen pydantic model below. The controller builds one,
the run store writes it (stamped with the session and both clocks) and the very same
object goes to the listener (the CLI's progress display): there is no second,
parallel event for listeners. Readers of a journal get these models back
(``harness.store.journal.read_events``). ``docs/run-directory.md``'s record table is written
from these models by ``python -m harness.store.journal_doc``.

Versions: ``v`` is the schema version a record was written under. Version 2 added
optional fields only (``dispatched.due_mono``, ``scored`` and ``total`` on the job
endings), so version 1 journals (written before these models) read unchanged: the
new fields are None there.

``JobStarted`` and ``Notice`` are for listeners only and never journaled: the first
is what the display needs to draw a progress bar, the second a warning for the
operator (the journal keeps the facts behind it, e.g. ``testset_loaded.invalid``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 2

Verdict = Literal["ok", "over_budget", "timeout", "crashed", "error", "invalid_output"]
FailureClass = Literal["participant", "venue"]


class JournalEvent(BaseModel):
    """What every journal record has; subclasses add their own fields."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    # What the doc generator writes after the field list (why the event happens).
    about: ClassVar[str] = ""

    v: int = Field(default=SCHEMA_VERSION, description="schema version")
    event: str
    session: str = Field(default="", description="one id per controller start")
    mono: float = Field(default=0.0, description="the controller's monotonic clock")
    wall: float = Field(default=0.0, description="Unix time")

    def stamped(self, v: int, session: str, mono: float, wall: float) -> Self:
        """The event with its header filled in, as the journal writes it.

        An event is stamped once, by the journal, before anyone else sees it: the header
        is set on the object itself rather than on a copy, which keeps a journal write as
        cheap as before the models. Stamping an event again gives a copy.
        """
        if self.session:
            return self.model_copy(update={"v": v, "session": session, "mono": mono, "wall": wall})
        fields = self.__dict__
        fields["v"], fields["session"], fields["mono"], fields["wall"] = v, session, mono, wall
        return self

    # Mapping-style reading, for code that scores journal records and outputs lines
    # (plain dicts) alike, e.g. ``running_score``.
    # The fields' values are the instance's __dict__ (a model keeps its fields there): read
    # directly, a scorer's pass over 100,000 completions costs a third of getattr's.
    def __getitem__(self, key: str) -> Any:
        return self.__dict__[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The field's value, or ``default`` when the record has no such field."""
        return self.__dict__.get(key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in type(self).model_fields


class JobEvent(JournalEvent):
    """A record about one (task, system) job."""

    task: str
    system: str


class SessionStarted(JournalEvent):
    """A controller started working in the run directory."""

    event: Literal["session_started"] = "session_started"
    # Optional when read: what readers act on is that a session started.
    pid: int | None = None
    site: str = ""
    site_sha256: str = ""
    limit: int | None = Field(default=None, description="`--limit`: items per task, if given")


class TestsetLoaded(JournalEvent):
    """A task's test set was read at session start."""

    __test__ = False  # not a pytest class
    event: Literal["testset_loaded"] = "testset_loaded"
    task: str
    items: int
    invalid: list[dict[str, str]] = Field(
        default_factory=list, description="id and reason of each unusable item"
    )


class TestsetHashes(JournalEvent):
    """The test set's files as the run uses them."""

    __test__ = False
    event: Literal["testset_hashes"] = "testset_hashes"
    task: str
    files: dict[str, str] = Field(
        description="test-set file -> SHA-256; the first session's are the reference"
    )


class JobSettings(JobEvent):
    """Every setting of a job that changes what its items mean or how they are judged."""

    event: Literal["job_settings"] = "job_settings"
    settings: dict[str, Any] = Field(
        description="what the job runs under: kind, test set and its digest, budget, "
        "audits, command, device..."
    )


class SiteChangeAccepted(JournalEvent):
    """A changed test set or job setting taken with `--accept-site-change`."""

    event: Literal["site_change_accepted"] = "site_change_accepted"
    task: str
    system: str | None = Field(default=None, description="null for a test-set change")
    changes: list[str]


class TestsetChanged(JournalEvent):
    """Found at the end of a job: the test set changed under the run, which stops."""

    __test__ = False
    event: Literal["testset_changed"] = "testset_changed"
    task: str
    changes: list[str]


class AuditSeed(JournalEvent):
    """The run's secret audit seed, drawn once and reused on resume."""

    event: Literal["audit_seed"] = "audit_seed"
    seed: int


class OperatorAction(JournalEvent):
    """An operator's control from the console (docs/console.md)."""

    event: Literal["operator_action"] = "operator_action"
    action: Literal["pause", "resume", "skip", "retry", "stop"] = Field(
        description="`pause`, `resume`, `skip`, `retry` or `stop`"
    )
    actor: str = "operator"
    task: str | None = Field(default=None, description="with `system`: the job acted on")
    system: str | None = None
    device: str | None = Field(default=None, description="or the device acted on")


class StartFailed(JobEvent):
    """The system did not come up; the controller tries again."""

    event: Literal["start_failed"] = "start_failed"
    try_number: int
    reason: str


class SystemStarted(JobEvent):
    """The system answered ready."""

    event: Literal["system_started"] = "system_started"
    restart: bool
    cause: FailureClass | None = Field(
        default=None, description="of a restart: `participant` or `venue`"
    )
    pid: int | str | None = Field(default=None, description="SSH: the remote session id")
    name: str
    version: str
    setup_seconds: float


class Dispatched(JobEvent):
    """An item is about to be sent: its dispatch, computed once."""

    event: Literal["dispatched"] = "dispatched"
    item: str
    attempt: int
    anon_id: str = Field(description="the anonymous name the system sees")
    budget_seconds: float | None
    hang_seconds: float | None = None
    audit_of: str | None = Field(default=None, description="the item a hidden audit repeat repeats")
    due_mono: float | None = Field(
        default=None, description="streams: when the frame was due on the `mono` clock, since v2"
    )


class Completed(JobEvent):
    """One item got its verdict (the first completion of an item counts)."""

    event: Literal["completed"] = "completed"
    item: str
    attempt: int
    anon_id: str
    verdict: Verdict = Field(
        description="`ok`, `over_budget`, `timeout`, `crashed`, `error` or `invalid_output`"
    )
    output: dict[str, Any] | None = Field(description="the system's answer")
    message: str = ""
    sent: float | None = None
    done: float | None = None
    seconds: float
    budget_seconds: float | None
    rtf: float | None = Field(default=None, description="audio in; for `tts` the produced audio")
    speed: float | None = Field(default=None, description="in the task kind's unit")
    stage_seconds: float | None = None
    round_trip_seconds: float | None = Field(default=None, description="SSH link; serial: per item")
    audit_of: str | None = None
    cpu_seconds: float | None = None
    peak_rss_bytes: int | None = None
    spawn_seconds: float | None = Field(
        default=None, description="exec mode: what starting the process cost, part of `seconds`"
    )
    clock_start: str | None = Field(
        default=None,
        description="serial: what started the processing clock (`complete`, `ack`, `answer`, "
        "or `first_byte` for an answer faster than its input could cross)",
    )
    fetch_seconds: float | None = Field(
        default=None,
        description="SSH: what copying the item's output files back cost after the "
        "answer, not part of `seconds`",
    )
    latency_seconds: float | None = Field(
        default=None, description="streams: answer time from when the frame was due"
    )
    late: bool | None = Field(
        default=None, description="streams: the answer came after the next frame was due"
    )
    resent: int | None = Field(
        default=None,
        description="attempts of the item lost to a venue failure before this one, since v2",
    )
    lost_seconds: float | None = Field(
        default=None,
        description="what those attempts ran, charged: part of `seconds`, since v2",
    )
    whole_input_first: bool | None = Field(
        default=None,
        description="serial, hidden audit repeats: the DATA went so that no first part of "
        "the input could be rebuilt before the last frame (false: the device takes DATA "
        "only in order, or dropped what came out of order), since v2",
    )
    offline: bool | None = Field(
        default=None,
        description="`onsite ingest`: the output came from a submitted file (an `ingested` "
        "record precedes it); no timing: `seconds` is 0 and the speed figures leave it out",
    )


class _Lost(JobEvent):
    item: str
    outcome: str = Field(description="the runner's outcome of the item")
    reason: str
    failure_class: FailureClass = Field(description="whose failure: `participant` or `venue`")


class SystemLost(_Lost):
    """The system was killed or died (`failure_class` `participant`); a restart follows."""

    event: Literal["system_lost"] = "system_lost"
    failure_class: FailureClass = Field(default="participant", description="`participant`")


class LinkLost(_Lost):
    """The link to the device failed, and nothing showed the participant's side was up
    (`failure_class` `venue`; docs/security.md, "Failures have an owner")."""

    about = (
        "after a reconnect the item is sent again with the next attempt number, at most "
        "twice; the time each lost attempt ran is charged to the item (`seconds`); a "
        "third loss records the item as crashed, flagged for the organizer"
    )
    event: Literal["link_lost"] = "link_lost"
    failure_class: FailureClass = Field(default="venue", description="`venue`")
    attempt: int | None = Field(default=None, description="the attempt lost, since v2")
    seconds: float | None = Field(
        default=None,
        description="what the lost attempt ran (sent to loss seen), charged to the item, since v2",
    )


class _JobEnd(JobEvent):
    scored: int | None = Field(
        default=None,
        description="items of the test set completed, audit repeats left out, since v2",
    )
    total: int | None = Field(
        default=None, description="items of the test set in this run, since v2"
    )


class JobFinished(_JobEnd):
    """Every item of the job is completed."""

    event: Literal["job_finished"] = "job_finished"
    completed: int


class JobFailed(_JobEnd):
    """The job could not complete (the system would not start, too many restarts)."""

    event: Literal["job_failed"] = "job_failed"
    reason: str


class JobSkipped(_JobEnd):
    """The job was left not done this session: the operator skipped its device, or the
    device did not answer for `[site] device_wait_seconds`. Nobody's failure: the next
    session runs it."""

    event: Literal["job_skipped"] = "job_skipped"
    completed: int
    reason: Literal["operator", "device_down"] = Field(
        default="operator", description="`operator` or `device_down`"
    )
    failure_class: FailureClass = Field(default="venue", description="`venue`")


class DeviceWaiting(JobEvent):
    """The job's device did not answer; the controller tries again after `next_try_seconds`.
    No start try is used up (the venue's failure)."""

    event: Literal["device_waiting"] = "device_waiting"
    device: str
    tries: int = Field(description="connection tries so far")
    down_seconds: float = Field(description="since the first unanswered try")
    next_try_seconds: float
    next_try_wall: float = Field(description="Unix time of the next try")
    error: str = Field(description="why the last try failed")
    failure_class: FailureClass = Field(default="venue", description="`venue`")


class DeviceDown(JobEvent):
    """The device stayed down for `[site] device_wait_seconds`: its job gives up for this
    session (a `job_skipped` with reason `device_down` follows)."""

    event: Literal["device_down"] = "device_down"
    device: str
    tries: int
    down_seconds: float
    error: str
    failure_class: FailureClass = Field(default="venue", description="`venue`")


class SessionFinished(JournalEvent):
    """The controller ran every job it was given."""

    event: Literal["session_finished"] = "session_finished"


class SessionInterrupted(JournalEvent):
    """The session ended early."""

    event: Literal["session_interrupted"] = "session_interrupted"
    reason: str = Field(description="stopped by the operator, refused input, disk full")


class Ingested(JobEvent):
    """A submitted file became the job's outputs (`onsite ingest`, docs/publishing.md): its
    `completed` records (`offline`) follow."""

    about = (
        "with `supersedes`, the job's earlier records stop counting from here (`--replace`): "
        "replay keeps the items' completions after the last such record; both stay in the journal"
    )
    event: Literal["ingested"] = "ingested"
    file: str = Field(description="the submitted file as the operator named it")
    sha256: str = Field(description="of the file's bytes")
    format: str = Field(description="how it was read (`trn`, `cwmt-xml`, `jsonl` ...)")
    items: int = Field(description="items it gave, one per item of the test set")
    encoding: str | None = Field(default=None, description="`--encoding`, if given")
    supersedes: int = Field(
        default=0,
        description="completions of the job recorded before, which stop counting (`--replace`)",
    )
    actor: str = "operator"


# Disputes (`onsite dispute`, harness/disputes.py, docs/publishing.md): a challenge, the
# organizer's decision and the appeal attempt of a rerun are records of their own, so
# nothing recorded before is ever rewritten and no reader of completions mistakes an
# appeal for an item's first completion.

DisputeDecision = Literal["rejected", "amended", "rerun"]


class DisputeFiled(JobEvent):
    """A participant challenged an item's verdict or score (`onsite dispute`)."""

    about = "a dispute alone changes nothing: only the organizer's `dispute_decided` does"
    event: Literal["dispute_filed"] = "dispute_filed"
    dispute: int = Field(description="the dispute's number in the run, from 1")
    item: str
    reason: str
    by: str = Field(default="", description="who filed it (`--by`), e.g. the team")
    attempt: int = Field(description="the attempt challenged (the item's completion)")
    verdict: Verdict = Field(description="the verdict challenged")


class AppealDispatched(JobEvent):
    """A disputed item is sent again on the organizer's `--rerun` (an appeal attempt)."""

    event: Literal["appeal_dispatched"] = "appeal_dispatched"
    dispute: int
    item: str
    attempt: int = Field(description="after every attempt the item had before")
    anon_id: str = Field(description="the anonymous name the system sees")
    budget_seconds: float | None
    hang_seconds: float | None = None


class AppealCompleted(JobEvent):
    """The appeal attempt's result, judged as any item's (`result` is its `completed` record)."""

    event: Literal["appeal_completed"] = "appeal_completed"
    dispute: int
    item: str
    attempt: int
    result: dict[str, Any] = Field(
        description="the fields of a `completed` record: verdict, output, seconds, budget ..."
    )


class DisputeDecided(JobEvent):
    """The organizer's decision on a dispute: what the item counts as from then on."""

    about = (
        "`rejected`: the original result stands; `amended`: the item counts with `verdict`; "
        "`rerun`: it counts with the appeal attempt's result (`attempt`)"
    )
    event: Literal["dispute_decided"] = "dispute_decided"
    dispute: int
    item: str
    decision: DisputeDecision = Field(description="`rejected`, `amended` or `rerun`")
    reason: str = ""
    verdict: Verdict | None = Field(
        default=None, description="`amended`: the verdict it counts with"
    )
    attempt: int | None = Field(default=None, description="`rerun`: the appeal attempt that counts")
    actor: str = "organizer"


# What a replay keeps for harness/disputes.py (RunState.disputes).
DISPUTE_RECORDS = (DisputeFiled, AppealDispatched, AppealCompleted, DisputeDecided)


class ReferencesReleased(JournalEvent):
    """The operator gave a participant the references and test inputs with its package
    before the run's embargo ended (`onsite package --with-references`,
    docs/publishing.md)."""

    event: Literal["references_released"] = "references_released"
    participant: str
    tasks: list[str] = Field(description="the tasks whose references the package holds")
    release_after: str | None = Field(
        default=None, description="the site's `release_after` date, if it has one"
    )
    output: str = Field(description="the package's directory")
    actor: str = "operator"


RECORD_TYPES: tuple[type[JournalEvent], ...] = (
    SessionStarted,
    TestsetLoaded,
    SystemStarted,
    StartFailed,
    Dispatched,
    Completed,
    SystemLost,
    LinkLost,
    JobFinished,
    JobFailed,
    JobSkipped,
    DeviceWaiting,
    DeviceDown,
    OperatorAction,
    TestsetHashes,
    JobSettings,
    SiteChangeAccepted,
    TestsetChanged,
    AuditSeed,
    SessionFinished,
    SessionInterrupted,
    Ingested,
    DisputeFiled,
    AppealDispatched,
    AppealCompleted,
    DisputeDecided,
    ReferencesReleased,
)

Record = Annotated[
    SessionStarted
    | TestsetLoaded
    | SystemStarted
    | StartFailed
    | Dispatched
    | Completed
    | SystemLost
    | LinkLost
    | JobFinished
    | JobFailed
    | JobSkipped
    | DeviceWaiting
    | DeviceDown
    | OperatorAction
    | TestsetHashes
    | JobSettings
    | SiteChangeAccepted
    | TestsetChanged
    | AuditSeed
    | SessionFinished
    | SessionInterrupted
    | Ingested
    | DisputeFiled
    | AppealDispatched
    | AppealCompleted
    | DisputeDecided
    | ReferencesReleased,
    Field(discriminator="event"),
]

BY_NAME: dict[str, type[JournalEvent]] = {t.model_fields["event"].default: t for t in RECORD_TYPES}


def event_name(model: type[JournalEvent]) -> str:
    """The ``event`` value a record type is journaled under."""
    return str(model.model_fields["event"].default)


@dataclass(frozen=True)
class JobStarted:
    """For listeners only: a job begins; ``done`` items were completed by earlier sessions."""

    task: str
    system: str
    total: int
    done: int


@dataclass(frozen=True)
class Notice:
    """For listeners only: something the operator should read (an invalid item, a warning)."""

    task: str
    message: str


Event = JournalEvent | JobStarted | Notice

# A completion as scorers read it: a journal `completed` record, or a line of an outputs
# file (a plain dict, read back by `onsite score` and the judging panel).
CompletionLike = Completed | Mapping[str, Any]
Listener = Callable[[Event], None]
