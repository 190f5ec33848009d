"""An exec-mode system, `exec_hostile.py MODE INPUT OUTPUT`, for the spawner's hard cases.

- ok: write {"text": "fine"}.
- exit N: exit with code N.
- grandchild: start a child that hangs and wait for it (the item must time out on time).
- daemon: leave a setsid daemon touching $HOME/marker behind, answer at once.
- swarm: leave six sleepers behind (three orphaned in sessions of their own, each with a
  child), named by the fourth argument, and answer at once.
- symlink: make the output a link to /etc/passwd.
- big: write an output of 2 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def main() -> None:
    mode, _source, target = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode.startswith("exit"):
        print(f"exec_hostile: exiting with {mode[4:]}", file=sys.stderr)
        sys.exit(int(mode[4:]))
    if mode == "grandchild":
        marker = os.path.join(os.environ["HOME"], "grandchild")
        loop = f"import time\nwhile True:\n open({marker!r}, 'a').write('.')\n time.sleep(0.05)"
        # The rest of the command line (a test's tag) goes to the child too: a test finds it.
        child = subprocess.Popen([sys.executable, "-c", loop, *sys.argv[4:]])
        child.wait()
    if mode == "daemon":
        marker = os.path.join(os.environ["HOME"], "marker")
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                while True:
                    with open(marker, "a") as fh:
                        fh.write(".")
                    time.sleep(0.05)
            os._exit(0)
        os.wait()
        while not os.path.exists(marker):
            time.sleep(0.01)
    if mode == "swarm":
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)", sys.argv[4]]
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                os.setsid()
                if os.fork() == 0:
                    # A sleeper with a sleeper child, orphaned when this process exits.
                    if os.fork() == 0:
                        os.execv(sys.executable, sleeper)
                    os.execv(sys.executable, sleeper)
                os._exit(0)
            os.waitpid(pid, 0)
    if mode == "symlink":
        os.symlink("/etc/passwd", target)
        return
    if mode == "big":
        with open(target, "w") as fh:
            fh.write(json.dumps({"text": "x" * (2 << 20)}))
        return
    with open(target, "w") as fh:
        json.dump({"text": "fine", "uid": os.getuid()}, fh)


if __name__ == "__main__":
    main()
