"""The command line (`onsite ...`): the parser and one module per command; it renders with rich
on a terminal and plainly otherwise. The entry point is ``harness.cli.main:main``."""
