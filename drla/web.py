"""``drla web MODEL.json``: serve web/ and one model on 127.0.0.1 and open the demo page for it.

The server answers GET only, on the loopback interface only, with the files under ``web/`` (plus the example
IK models under ``scenes/robot_arm/``) and the given model at ``/model.json``; nothing else on the disk is
reachable. It runs until Ctrl-C.
"""

from __future__ import annotations

import mimetypes
import signal
import threading
import webbrowser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from drla_core.io.model_io import Model
from drla_core.base.spaces import Discrete

from .extension import ROOT  # the checkout, or the installed drla_ext package (the wheel ships web/'s demo in it)

#: URL prefix -> folder served under it
FOLDERS = {"/web/": ROOT / "web", "/scenes/robot_arm/": ROOT / "scenes" / "robot_arm"}
TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json", ".html": "text/html",
         ".css": "text/css", ".png": "image/png"}


def demo_for(model: Model) -> str:
    """The demo page (under /web/demos/) that shows ``model``; raises ``ValueError`` when none fits."""
    env = str(model.meta.get("env", ""))
    discrete = isinstance(model.action_space, Discrete)
    if model.kind == "ik":
        if "arm" not in model.extra:
            raise ValueError("this IK model has no arm description (extra.arm): the arm demo cannot draw it")
        return "arm.html"
    if discrete and (env == "cartpole" or (model.network.input_size == 4 and model.action_space.n == 2)):
        return "cartpole.html"
    recorded = ROOT / "web" / "demos" / "models" / f"tank_sequence_{model.network.input_size}.json"
    if discrete and model.action_space.n == 8 and recorded.exists():  # TankGrid's or the tank scene's
        return "tank.html"
    raise ValueError(f"no demo page fits this model (kind {model.kind}, {model.network.input_size} inputs, "
                     f"env {env or 'unknown'}): the demos are CartPole, the robot arm (IK) and the tank")


def make_server(model_bytes: bytes, port: int = 0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: any free one) for ``FOLDERS`` and ``/model.json``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = unquote(urlsplit(self.path).path)
            if path == "/model.json":
                return self._send(model_bytes, "application/json")
            if path == "/favicon.ico":  # browsers ask; an empty answer keeps their consoles clean
                self.send_response(HTTPStatus.NO_CONTENT)
                self.end_headers()
                return None
            if path in ("/", "/index.html"):
                self.send_response(HTTPStatus.FOUND)
                self.send_header("Location", "/web/demos/index.html")
                self.end_headers()
                return None
            for prefix, folder in FOLDERS.items():
                if path.startswith(prefix):
                    file = (folder / path[len(prefix):]).resolve()
                    if file.is_relative_to(folder) and file.is_file() and "node_modules" not in file.parts:
                        kind = TYPES.get(file.suffix) or mimetypes.guess_type(file.name)[0] or "text/plain"
                        return self._send(file.read_bytes(), kind)
            self.send_error(HTTPStatus.NOT_FOUND)
            return None

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the command prints the address
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def demo_url(server: ThreadingHTTPServer, page: str) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/web/demos/{page}?model=/model.json"


def cmd_web(args: Any) -> int:
    from .common import CLIError, load_model_file

    model = load_model_file(args.model)
    try:
        page = demo_for(model)
    except ValueError as exc:
        raise CLIError(f"{args.model}: {exc}") from None
    try:
        server = make_server(Path(args.model).read_bytes(), args.port)
    except OSError as exc:
        raise CLIError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    url = demo_url(server, page)
    print(f"serving {args.model} at {url}\n(Ctrl-C stops the server)", flush=True)
    if not args.no_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C stops it even when started with SIGINT ignored (a job a shell started in the background)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nstopped")
    finally:
        server.server_close()
    return 0
