"""Starting and reading a real `keel serve` process for the load, soak and bench e2e tests."""
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KeelServe:
    """A `keel serve` child process on a free port; `stop()` sends SIGTERM and returns the exit code."""

    def __init__(self, keel_bin: str, model_path: str, *flags: str, threads: int = 2, env: dict | None = None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [keel_bin, "serve", "--model", model_path, "--port", str(self.port), "--served-model-name", "smollm2",
             *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "KEEL_THREADS": str(threads), **(env or {})})
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.health() == 200:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"keel serve exited with {self.proc.returncode}: {self.proc.stdout.read()}")
            time.sleep(0.2)
        self.proc.kill()
        raise RuntimeError("keel serve did not become healthy in 120 s")

    def health(self) -> int:
        try:
            with urllib.request.urlopen(self.base + "/health", timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return 0

    def metrics(self) -> dict:
        """Every unlabelled sample and every labelled one (by its full name with labels) as a float."""
        with urllib.request.urlopen(self.base + "/metrics", timeout=30) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def post(self, path: str, body: bytes = b"{}", headers: dict | None = None) -> int:
        req = urllib.request.Request(self.base + path, data=body,
                                     headers={"Content-Type": "application/json", **(headers or {})}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                r.read()
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def flush_cache(self) -> None:
        assert self.post("/flush_cache") == 200

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))

    def stop(self, timeout: float = 120) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
