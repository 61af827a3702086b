"""Jupyter kernels forked from one process that has already imported what the notebooks import, for the notebook
tier: each of its ~20 kernels would otherwise spend about 10 s of a core importing torch, open_clip, scikit-learn,
pandas and the book's modules, a fifth of the tier's CPU time on a 2-core machine.

    python tests/forked_kernel.py serve SOCKET      # the server: imports once, then forks a kernel per request
    python tests/forked_kernel.py kernel -f FILE    # the kernel spec's command (``kernel_spec``): asks the server

The server imports ``PRELOAD`` with the environment the kernels run with (one OpenMP thread: ``SMOKE_ENV``) and
matplotlib's inline backend named before matplotlib is imported, as ipykernel names it, then listens on a Unix
socket. It stays single-threaded, so that a fork copies no lock another thread holds. For each request (the kernel's
connection file, environment and working directory) it forks a child that takes that environment and directory and
runs ipykernel as ``python -m ipykernel_launcher -f FILE`` would. The requesting process (what jupyter_client
started and watches) forwards its signals to the child, and exits with the child's status; if it dies first, the
server kills the child. Without a server (``VLP_FORKED_KERNEL_SOCKET`` unset or not answering) it runs ipykernel
itself. A notebook's own imports then find the modules loaded and run as they would in a fresh kernel.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOCKET_VARIABLE = "VLP_FORKED_KERNEL_SOCKET"
NAME = "vlp-forked"  # the kernel spec's name (papermill -k)
PRELOAD = (
    "torch",
    "open_clip",
    "numpy",
    "pandas",
    "sklearn.linear_model",
    "matplotlib.pyplot",
    "IPython.display",
    "myst_nb",
    "ipykernel.kernelapp",
    "vlp_lib.experiment",
    "vlp_lib.book.pages",
    "vlp_lib.book.report",
    "vlp_lib.book.lineup",
    "vlp_lib.papers",
)


def kernel_spec(folder: Path) -> Path:
    """A kernel spec named ``NAME`` under ``folder`` (``folder/kernels/NAME/kernel.json``, found through
    ``JUPYTER_PATH=folder``) whose kernel asks the server; returns ``folder``."""
    spec = folder / "kernels" / NAME
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, str(Path(__file__).resolve()), "kernel", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Python 3 (forked)", "language": "python"}, indent=1)
    )
    return folder


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen, dict[str, str]]:
    """The server started in a folder of its own with ``env`` (what the kernels run with), and the variables that
    send a papermill run under ``env`` to it (``-k NAME``): the server's process and ``{variable: value}``."""
    folder = Path(tempfile.mkdtemp(prefix="vlp-kernels-"))  # short: a Unix socket's path is at most 107 bytes
    path = str(folder / "server.sock")
    variables = {
        "JUPYTER_PATH": os.pathsep.join(p for p in (str(kernel_spec(folder)), env.get("JUPYTER_PATH")) if p),
        SOCKET_VARIABLE: path,
    }
    with open(folder / "server.log", "w") as log:
        server = subprocess.Popen([sys.executable, __file__, "serve", path], env=env, stdout=log, stderr=log)
    return server, variables


def stop_server(server: subprocess.Popen) -> None:
    """Stop the server (and any kernel it still holds) and remove its folder."""
    path = Path(server.args[-1])
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
    shutil.rmtree(path.parent, ignore_errors=True)


def _run_ipykernel(argv: list[str]) -> None:
    """ipykernel as ``python -m ipykernel_launcher`` runs it (its launcher drops the working directory from the path)."""
    import importlib.util

    from ipykernel import kernelapp

    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path.pop(0)
    launcher = importlib.util.find_spec("ipykernel_launcher")
    sys.argv = [launcher.origin if launcher and launcher.origin else "ipykernel_launcher", *argv]
    kernelapp.launch_new_instance(argv=argv)


def serve(path: str) -> None:
    """Import ``PRELOAD``, then fork a kernel for every request on the Unix socket ``path`` until stopped."""
    sys.path.pop(0)  # this file's folder: a kernel's path is the interpreter's, as ipykernel_launcher leaves it
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    try:
        for module in PRELOAD:
            __import__(module)
    except BaseException:
        Path(path + ".failed").touch()  # the kernels then start on their own (``kernel``)
        raise
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.rename(path + ".tmp", path)  # the socket appears only once the imports are done
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}  # kernel pid -> the connection of the process that asked for it
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while not stop:
        for key, _ in selector.select(timeout=0.2):
            if key.fileobj is listener:
                connection, _ = listener.accept()
                request = json.loads(connection.makefile().readline())
                pid = os.fork()
                if pid == 0:  # the kernel
                    selector.close()
                    listener.close()
                    connection.close()
                    for connected in children.values():
                        connected.close()
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    os.environ.clear()
                    os.environ.update(request["env"])
                    os.chdir(request["cwd"])
                    code = 1
                    try:
                        _run_ipykernel(request["argv"])
                        code = 0
                    except SystemExit as err:
                        code = err.code if isinstance(err.code, int) else 1
                    finally:  # never back into the server's loop: exit as an interpreter would, then for good
                        atexit._run_exitfuncs()
                        sys.stdout.flush()
                        sys.stderr.flush()
                        os._exit(code)
                connection.sendall(f"{pid}\n".encode())
                children[pid] = connection
                selector.register(connection, selectors.EVENT_READ, pid)
            else:  # the asking process closed its end: it died before its kernel
                selector.unregister(key.fileobj)
                if key.data in children:
                    os.kill(key.data, signal.SIGKILL)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            connection = children.pop(pid)
            try:
                selector.unregister(connection)
            except (KeyError, ValueError):
                pass
            try:
                connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            connection.close()
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    os.unlink(path)


def kernel(argv: list[str]) -> int:
    """Ask the server for a kernel with this process's environment and working directory, forward signals to it
    and return its exit status; run ipykernel here when no server answers."""
    path = os.environ.get(SOCKET_VARIABLE)
    deadline = time.monotonic() + 120  # the server's imports, under load
    connection = None
    while path and connection is None:
        if os.path.exists(path):
            try:
                connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                connection.connect(path)
            except OSError:  # no server behind the socket any more
                connection = None
                break
        elif (
            time.monotonic() > deadline or os.path.exists(path + ".failed") or not os.path.isdir(os.path.dirname(path))
        ):
            break
        else:
            time.sleep(0.1)
    if connection is None:
        _run_ipykernel(argv)
        return 0
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    connection.sendall((json.dumps(request) + "\n").encode())
    replies = connection.makefile()
    pid = int(replies.readline())
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda n, _: os.kill(pid, n))
    status = replies.readline()
    return int(status) if status.strip() else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(kernel(sys.argv[2:]))
