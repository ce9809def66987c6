"""The demo pages (web/demos/) and ``drla web``: the right page for each model, a server that serves only what
it should, and a screenshot of each page in headless Chromium, checked to be non-blank and written to
docs/images/ (the browser part is skipped, with the reason, where chromium or playwright-core is missing)."""

from __future__ import annotations

import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from drla import portable, web
from drla_core.io.model_io import load_model
from drla_core.io.png import read_png

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
DEMOS = [("cartpole", ROOT / "web/demos/models/cartpole.json", "cartpole.html"),
         ("arm", ROOT / "scenes/robot_arm/arm6_ik.json", "arm.html"),
         ("tank", ROOT / "web/demos/models/tank.json", "tank.html"),
         ("tank_scene", ROOT / "web/demos/models/tank_scene.json", "tank.html")]


@pytest.mark.parametrize("name, path, page", DEMOS, ids=[d[0] for d in DEMOS])
def test_each_model_gets_its_demo(name: str, path: Path, page: str) -> None:
    assert web.demo_for(load_model(path)) == page


def test_a_model_without_a_demo_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no demo page fits this model"):
        web.demo_for(load_model(ROOT / "web/conformance/mlp_relu.json"))
    out = subprocess.run([sys.executable, "-m", "drla", "web", "web/conformance/mlp_relu.json", "--no-browser"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no demo page fits" in out.stderr


def serving(model: Path) -> tuple[web.ThreadingHTTPServer, threading.Thread]:
    server = web.make_server(model.read_bytes())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def test_server_serves_the_model_and_web_only() -> None:
    model = DEMOS[0][1]
    server, thread = serving(model)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert urllib.request.urlopen(base + "/model.json").read() == model.read_bytes()
        page = urllib.request.urlopen(web.demo_url(server, "cartpole.html"))
        assert page.headers["Content-Type"] == "text/html" and b"CartPole" in page.read()
        assert urllib.request.urlopen(base + "/web/drla.js").headers["Content-Type"] == "text/javascript"
        for path in ("/web/../drla/cli.py", "/web/%2e%2e/drla/cli.py", "/drla/cli.py", "/web/node_modules/x",
                     "/scenes/robot_arm/../../Makefile"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(base + path)
            assert err.value.code == 404
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_demo_pages_render_in_chromium() -> None:
    found, why = portable.find_browser()
    if found is None:
        pytest.skip(f"headless Chromium NOT run, no screenshots taken: {why}")
    IMAGES.mkdir(parents=True, exist_ok=True)
    servers = [serving(path) for _, path, _ in DEMOS]
    try:
        # ?still=N: the page after N steps, drawn once, so that the pictures are the same on every run
        tasks = [{"type": "screenshot", "url": web.demo_url(server, page) + "&still=60",
                  "path": str(IMAGES / f"web_demo_{name}.png"), "wait": "window.demoReady", "ms": 200}
                 for (name, _, page), (server, _) in zip(DEMOS, servers)]
        shots = portable.run_browser(tasks)
    finally:
        for server, thread in servers:
            server.shutdown()
            server.server_close()
            thread.join(5)
    for (name, _, _), shot in zip(DEMOS, shots):
        assert "error:" not in shot["text"], shot["text"]
        image = read_png(shot["path"])
        colours = np.unique(image.reshape(-1, image.shape[-1]), axis=0)
        assert len(colours) > 50 and image.std() > 10, f"{name}: the screenshot looks blank"
    cartpole, arm, *tanks = (s["text"] for s in shots)
    assert "push_" in cartpole and "episode" in cartpole
    assert "error, + refinement" in arm and " mm" in arm
    for tank in tanks:
        agree = tank.split("agreement")[1].split()[0:3]
        assert agree[0] == agree[2], f"the JS greedy actions differ from the recorded Python ones: {agree}"
