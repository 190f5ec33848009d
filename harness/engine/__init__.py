"""What runs a session: the controller and its jobs, budgets and verdicts, integrity checks and
audits, operator stations' job claims, the dry run, the manifest and the running score."""
