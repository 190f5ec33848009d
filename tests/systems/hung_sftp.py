"""An SFTP server that hangs: sshd's sftp-server behind a relay that stops passing the
client's requests on once the file named by its first argument exists (a hung file
service on a participant's machine whose SSH sessions still work)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time


def main() -> None:
    flag = sys.argv[1]
    server = subprocess.Popen(
        ["/usr/lib/openssh/sftp-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None

    def answers() -> None:
        assert server.stdout is not None
        while chunk := os.read(server.stdout.fileno(), 65536):
            os.write(1, chunk)

    threading.Thread(target=answers, daemon=True).start()
    while chunk := os.read(0, 65536):
        if os.path.exists(flag):
            # Hung: nothing more reaches the server, nothing more is answered.
            while True:
                time.sleep(3600)
        server.stdin.write(chunk)
        server.stdin.flush()
    server.stdin.close()
    server.wait()


if __name__ == "__main__":
    main()
