"""Where a run is kept: the event records, the run directory (journal.jsonl) and the run in
PostgreSQL behind one interface (``harness.store.api``), and the read model of a run.

The public names load with their module on first use (lazy_exports): reading a run's
journal does not load the PostgreSQL driver.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from harness.store.api import JournalTail, RunSource, RunWriter, is_pg_location, open_source
    from harness.store.directory import (
        JobSummary,
        RunLocked,
        RunState,
        RunStore,
        RunStoreError,
        SessionSummary,
        lock_run_dir,
    )
    from harness.store.directory_source import DirectorySource, site_of_run
    from harness.store.events import (
        RECORD_TYPES,
        SCHEMA_VERSION,
        AuditSeed,
        Completed,
        DeviceDown,
        DeviceWaiting,
        Dispatched,
        Event,
        JobFailed,
        JobFinished,
        JobSettings,
        JobSkipped,
        JobStarted,
        JournalEvent,
        LinkLost,
        Listener,
        Notice,
        OperatorAction,
        SessionFinished,
        SessionInterrupted,
        SessionStarted,
        SiteChangeAccepted,
        StartFailed,
        SystemLost,
        SystemStarted,
        TestsetChanged,
        TestsetHashes,
        TestsetLoaded,
    )
    from harness.store.journal import Journal, read_events, read_journal
    from harness.store.postgres import PgRunStore, PgStoreError
    from harness.store.postgres_run import PgRunSource, PgRunWriter
    from harness.store.run_model import RunModel

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("JournalTail", "RunSource", "RunWriter", "is_pg_location", "open_source"), ".api"
        ),
        **dict.fromkeys(
            (
                "JobSummary",
                "RunLocked",
                "RunState",
                "RunStore",
                "RunStoreError",
                "SessionSummary",
                "lock_run_dir",
            ),
            ".directory",
        ),
        **dict.fromkeys(("DirectorySource", "site_of_run"), ".directory_source"),
        **dict.fromkeys(
            (
                "RECORD_TYPES",
                "SCHEMA_VERSION",
                "AuditSeed",
                "Completed",
                "DeviceDown",
                "DeviceWaiting",
                "Dispatched",
                "Event",
                "JobFailed",
                "JobFinished",
                "JobSettings",
                "JobSkipped",
                "JobStarted",
                "JournalEvent",
                "LinkLost",
                "Listener",
                "Notice",
                "OperatorAction",
                "SessionFinished",
                "SessionInterrupted",
                "SessionStarted",
                "SiteChangeAccepted",
                "StartFailed",
                "SystemLost",
                "SystemStarted",
                "TestsetChanged",
                "TestsetHashes",
                "TestsetLoaded",
            ),
            ".events",
        ),
        **dict.fromkeys(("Journal", "read_events", "read_journal"), ".journal"),
        **dict.fromkeys(("PgRunStore", "PgStoreError"), ".postgres"),
        **dict.fromkeys(("PgRunSource", "PgRunWriter"), ".postgres_run"),
        "RunModel": ".run_model",
    },
)

__all__ = [
    "RECORD_TYPES",
    "SCHEMA_VERSION",
    "AuditSeed",
    "Completed",
    "DeviceDown",
    "DeviceWaiting",
    "DirectorySource",
    "Dispatched",
    "Event",
    "JobFailed",
    "JobFinished",
    "JobSettings",
    "JobSkipped",
    "JobStarted",
    "JobSummary",
    "Journal",
    "JournalEvent",
    "JournalTail",
    "LinkLost",
    "Listener",
    "Notice",
    "OperatorAction",
    "PgRunSource",
    "PgRunStore",
    "PgRunWriter",
    "PgStoreError",
    "RunLocked",
    "RunModel",
    "RunSource",
    "RunState",
    "RunStore",
    "RunStoreError",
    "RunWriter",
    "SessionFinished",
    "SessionInterrupted",
    "SessionStarted",
    "SessionSummary",
    "SiteChangeAccepted",
    "StartFailed",
    "SystemLost",
    "SystemStarted",
    "TestsetChanged",
    "TestsetHashes",
    "TestsetLoaded",
    "is_pg_location",
    "lock_run_dir",
    "open_source",
    "read_events",
    "read_journal",
    "site_of_run",
]
