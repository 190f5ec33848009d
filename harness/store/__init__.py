"""Where a run is kept: the event records, the run directory (journal.jsonl) and the run in
PostgreSQL behind one interface (``harness.store.api``), and the read model of a run."""
