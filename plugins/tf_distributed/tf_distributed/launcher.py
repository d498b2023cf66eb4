"""Start the worker processes through torchrun and talk to rank 0: the parent's side.

`tensorforge run --target <system>` is one command for the user; this module turns it into
`python -m torch.distributed.run --standalone --nproc-per-node N -m tf_distributed.worker`
(torchrun itself, so rendezvous, ranks and environment are PyTorch's own), with a control
listener on the loopback interface that only a process holding this run's random key may join.

Why the parent keeps running: the prediction, the capture, the summary and the exports are the
single-device `run`'s, unchanged; only measurement happens in the workers, so the parent holds a
session object whose calls become commands to them.
"""

import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Listener
from typing import Any

from tensorforge_measure import Unavailable
from tf_distributed.worker import AUTHKEY_ENV

# The workers' combined output goes to a temporary file, deleted at the end (its last lines go
# into any error message); set this variable to a path to keep it there instead.
LOG_ENV = "TENSORFORGE_DIST_LOG"
START_TIMEOUT_S = 300.0  # imports, plugin loading and communicator set-up on every rank
COMMAND_TIMEOUT_S = 1800.0  # no single command should come near this; a hung rank will
LOG_TAIL = 2000


class Launch:
    """The running torchrun job and the connection to its rank 0."""

    def __init__(self, nprocs: int, device_kind: str, env: dict[str, str] | None = None):
        self.nprocs, self.device_kind = nprocs, device_kind
        key = secrets.token_bytes(32)
        self.listener = Listener(("127.0.0.1", 0), authkey=key)
        host, port = self.listener.address
        kept = (env or os.environ).get(LOG_ENV)
        self.keep_log = bool(kept)
        self.log = (
            open(kept, "ab")
            if kept
            else tempfile.NamedTemporaryFile(prefix="tensorforge-torchrun-", suffix=".log", delete=False)
        )
        self.command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nnodes",
            "1",
            "--nproc-per-node",
            str(nprocs),
            "-m",
            "tf_distributed.worker",
            "--device",
            device_kind,
            "--control",
            f"{host}:{port}",
        ]
        child_env = dict(os.environ if env is None else env)
        child_env[AUTHKEY_ENV] = key.hex()
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        if device_kind == "cpu":
            child_env.setdefault("OMP_NUM_THREADS", "1")  # torch-cpu sets its own thread count per rank
        self.proc = subprocess.Popen(
            self.command, stdout=self.log, stderr=subprocess.STDOUT, env=child_env, start_new_session=True
        )
        self.conn = None
        try:
            self.conn = self._accept()
        except BaseException:
            self.close(force=True)
            raise

    def _accept(self):
        box: list[Any] = []
        thread = threading.Thread(target=lambda: box.append(self._accept_once()), daemon=True)
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while thread.is_alive():
            thread.join(0.2)
            if self.proc.poll() is not None and thread.is_alive():
                raise Unavailable(
                    f"the worker processes exited ({self.proc.returncode}) before rank 0 connected: {self.tail()}"
                )
            if time.monotonic() > deadline:
                raise Unavailable(f"rank 0 did not connect within {START_TIMEOUT_S:g} s: {self.tail()}")
        if not box or isinstance(box[0], BaseException):
            raise Unavailable(f"rank 0 could not connect: {box[0] if box else 'no connection'}")
        return box[0]

    def _accept_once(self):
        try:
            return self.listener.accept()
        except BaseException as exc:
            return exc

    def tail(self) -> str:
        """The end of the workers' combined output, on one line (for error messages)."""
        try:
            with open(self.log.name, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            return "(no worker log)"
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line or "error" in line]
        shown = " | ".join((errors or lines)[-3:])
        return shown[-LOG_TAIL:] or "(the workers printed nothing)"

    def call(self, command: dict[str, Any], timeout_s: float = COMMAND_TIMEOUT_S) -> list[dict[str, Any]]:
        """Send one command; every rank's reply, in rank order."""
        if self.conn is None:
            raise Unavailable("the worker processes are not running")
        try:
            self.conn.send(command)
            deadline = time.monotonic() + timeout_s
            while not self.conn.poll(0.2):
                if self.proc.poll() is not None:
                    raise Unavailable(
                        f"the worker processes exited ({self.proc.returncode}) during "
                        f"{command.get('op')!r}: {self.tail()}"
                    )
                if time.monotonic() > deadline:
                    raise Unavailable(f"{command.get('op')!r} took longer than {timeout_s:g} s: {self.tail()}")
            return self.conn.recv()
        except (EOFError, OSError, BrokenPipeError) as exc:
            raise Unavailable(
                f"lost the worker processes during {command.get('op')!r} ({type(exc).__name__}): {self.tail()}"
            ) from None

    def close(self, force: bool = False) -> None:
        if self.conn is not None and not force and self.proc.poll() is None:
            try:
                self.call({"op": "exit"}, timeout_s=60)
            except Unavailable:
                pass
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        try:
            self.proc.wait(timeout=30 if not force else 1)
        except subprocess.TimeoutExpired:
            # our own torchrun and its workers (a process group of their own: start_new_session)
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.listener.close()
        self.log.close()
        if not self.keep_log:
            try:
                os.unlink(self.log.name)
            except OSError:
                pass
