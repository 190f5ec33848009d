"""The capped stderr log: head and tail kept, the cut counted, whatever a system writes."""

from __future__ import annotations

import os
from pathlib import Path

from runners import LogCap


def test_head_and_tail_are_kept_and_the_cut_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "system.log"
    log = LogCap(path, 4096)
    log.note("--- onsite: starting")
    assert log.write_fd is not None
    written = 0
    for n in range(5000):
        line = f"line {n:06d}\n".encode()
        os.write(log.write_fd, line)
        written += len(line)
    log.settle(5.0)
    log.note("--- onsite: the end")
    log.close()
    text = path.read_text()
    assert len(text) <= 4096 + 100
    assert text.startswith("--- onsite: starting\nline 000000\n")
    assert text.endswith("line 004999\n--- onsite: the end\n")
    assert text.count("--- onsite log cut:") == 1
    start = text.index("\n--- onsite log cut:")
    end = text.index("---\n", start + 2) + 4
    left_out = int(text[start:end].split(":")[1].split("bytes")[0])
    total_in = len("--- onsite: starting\n") + written + len("--- onsite: the end\n")
    assert left_out == total_in - (len(text) - (end - start))


def test_a_small_log_is_untouched_and_reopening_appends(tmp_path: Path) -> None:
    path = tmp_path / "system.log"
    for word in ("first", "second"):
        log = LogCap(path, 1 << 20)
        assert log.write_fd is not None
        os.write(log.write_fd, f"{word}\n".encode())
        log.close()
    assert path.read_text() == "first\nsecond\n"
