"""Shared by the GPU check scripts: a `keel serve --device cuda` process for the length of a `with`
block (ready once /health answers), and a completion request to it."""
import contextlib
import json
import os
import subprocess
import time
import urllib.request


@contextlib.contextmanager
def cuda_server(keel, model, port, args=(), log=None, env_extra=None):
    """Serves `model` on `port` (plus `args`); output to `log` (a file) or discarded."""
    out = log if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen([keel, "serve", "-m", model, "--device", "cuda", "--port", str(port),
                             "--mem-fraction", "0.05", *args], stdout=out,
                            stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
                            env=dict(os.environ, **(env_extra or {})))
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def post_completion(port, body):
    """POST /v1/completions; the parsed response."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)
