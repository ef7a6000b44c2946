"""Screenshots Model Explorer showing a run's per-node overlay (RUN/localize/model_explorer_node_data.json)
on the run's model.onnx, rendered by headless Chromium with software WebGL (SwiftShader). Runs in the
environment of check_node_data.py, plus websocket-client for the DevTools protocol:

    python3 -m venv /tmp/me-venv
    /tmp/me-venv/bin/pip install ai-edge-model-explorer==0.1.34 model-explorer-onnx==0.4.2 websocket-client
    /tmp/me-venv/bin/python bench/model_explorer/screenshot.py RUN OUT.png [NODE_REGEX]

Starts `model-explorer RUN/model.onnx --extensions=model_explorer_onnx --node_data_paths=...` on
127.0.0.1:8081 and `chromium --headless=new --use-gl=angle --use-angle=swiftshader
--enable-unsafe-swiftshader` with a DevTools port, opens the URL the server prints, waits for the graph,
rows with value 1 (default: the first such row; Model Explorer then centres the graph on that node),
zooms out a little, and saves a 1600x1000 PNG. Stops both processes at the end. (A plain
`chromium --headless=new --screenshot --virtual-time-budget=...` never returns here: the page keeps
virtual time from advancing.)"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

FLAGS = ["--headless=new", "--no-sandbox", "--use-gl=angle", "--use-angle=swiftshader",
         "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist", "--window-size=1600,1000"]


def start_server(run, port):
    exe = os.path.join(os.path.dirname(sys.executable), "model-explorer")
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    server = subprocess.Popen([exe, os.path.join(run, "model.onnx"), "--extensions=model_explorer_onnx",
                               "--node_data_paths=" + os.path.join(run, "localize", "model_explorer_node_data.json"),
                               "--host", "127.0.0.1", "--port", str(port), "--no_open_in_browser"],
                              stdout=log, stderr=subprocess.STDOUT)
    for _ in range(120):
        time.sleep(0.5)
        match = re.search(r"(http://127\.0\.0\.1:\d+/\?data=\S+)", open(log.name).read())
        if match:
            return server, match.group(1)
    server.kill()
    raise SystemExit("model-explorer printed no URL: " + open(log.name).read())


class Page:
    def __init__(self, ws_url):
        self.ws = websocket.create_connection(ws_url, timeout=120, suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def js(self, expression):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def click(self, selector):  # a real mouse click, so that moving away later hides the tooltip
        box = self.js(f"(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect();"
                      " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def wait_for(self, expression, seconds):
        for _ in range(int(seconds * 2)):
            if self.js(expression):
                return True
            time.sleep(0.5)
        return False


def main(run, out, node_regex=""):
    server, url = start_server(run, 8081)
    profile = tempfile.mkdtemp(prefix="me-chromium-")
    browser = subprocess.Popen(["chromium", *FLAGS, "--remote-debugging-port=9222", "--user-data-dir=" + profile,
                                "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(60):
            try:
                tabs = json.load(urllib.request.urlopen("http://127.0.0.1:9222/json"))
                break
            except OSError:
                time.sleep(0.5)
        page = Page([t for t in tabs if t["type"] == "page"][0]["webSocketDebuggerUrl"])
        page.call("Emulation.setDeviceMetricsOverride", width=1600, height=1000, deviceScaleFactor=1, mobile=False)
        page.call("Page.navigate", url=url)
        if not page.wait_for("!!document.querySelector('div.expand-all') && "
                             "[...document.querySelectorAll('tr')].some(r => /\\t1$/.test(r.innerText))", 120):
            print("the graph or its node data did not appear in 120 s", file=sys.stderr)
        time.sleep(3)
        page.click("div.expand-all")
        time.sleep(5)
        row = page.js("(() => { const rows = [...document.querySelectorAll('tr')].filter(r => /^\\s*\\d+\\t"
                      + (node_regex or ".*") + "\\t1$/.test(r.innerText));"
                      " if (!rows.length) return null; (rows[0].querySelector('td:nth-child(2)') || rows[0]).click();"
                      " return rows[0].innerText; })()")
        print("clicked node-data row:", row)
        time.sleep(4)
        page.js("document.activeElement && document.activeElement.blur()")
        page.call("Input.dispatchMouseEvent", type="mouseMoved", x=900, y=600)
        page.call("Input.dispatchMouseEvent", type="mouseWheel", x=540, y=500, deltaX=0, deltaY=100, modifiers=2)
        time.sleep(4)
        shot = page.call("Page.captureScreenshot", format="png")
        with open(out, "wb") as handle:
            handle.write(base64.b64decode(shot["data"]))
        print("wrote", out, "webgl:", page.js("(() => { const g = document.createElement('canvas').getContext('webgl2');"
                                              " return g ? g.getParameter(g.VERSION) : 'none'; })()"))
    finally:
        browser.terminate()
        server.terminate()
        browser.wait(15)
        server.wait(15)


if __name__ == "__main__":
    main(*sys.argv[1:4])
