"""web.update.100k: a server commit → painted in headless Chromium, over a 100k-row inbox.

Run by `livelist bench` (or alone: `python3 Scripts/web-bench.py [--quick]`); prints one JSON
line: median and p99 from the commit (this process's clock) to the frame that shows it (the page's
own performance clock, `performance.timeOrigin + performance.now()` at the `livelist:painted`
mark's frame), bytes per update, and the baseline in the same run: a page that refetches the
visible window as JSON on every commit notification and redraws it.

With `--mutations`, web.mutate.100k instead: the demo page's own mutations, one at a time (a
visible row marked read or unread, with its pending effect): median and p99 from `mutate` to its
answer, and to the pending row's end (the list holds the commit: the server's row in its place),
on the page's clock, and the frames the page sent per mutation.
"""

import http.server
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Tests", "Browser"))
from test_web import Server, browser, eventually  # noqa: E402

QUICK = "--quick" in sys.argv
MUTATIONS = "--mutations" in sys.argv
ROWS = 100_000
COMMITS = 30 if QUICK else 150
ORDER = "day DESC, last_activity DESC, id"

# Marks when a row whose subject starts with "bench " is first painted, and the frames' bytes.
PAGE_PROBE = """
window.benchSeen = {};
const seen = window.benchSeen;
const scan = () => {
  for (const cell of document.querySelectorAll('.c-subject')) {
    const text = cell.textContent;
    if (text.startsWith('bench ') && !(text in seen)) seen[text] = performance.timeOrigin + performance.now();
  }
};
// Painted: the frame after a render (the observer runs before that frame's paint).
new MutationObserver(() => requestAnimationFrame(() => { performance.mark('livelist:painted'); scan(); })).observe(document.body, { subtree: true, childList: true, characterData: true });
"""

BASELINE_PAGE = """
const [port, notifyURL] = arguments;
document.body.innerHTML = "<div id=list style='height:600px;overflow:auto;font:14px sans-serif'></div>";
const list = document.getElementById('list');
window.baselineBytes = 0; window.baselineUpdates = 0;
const draw = async () => {
  const response = await fetch(`http://127.0.0.1:${port}/window?start=0&count=60`);
  const text = await response.text();
  window.baselineBytes += text.length; window.baselineUpdates += 1;
  const rows = JSON.parse(text);
  list.innerHTML = rows.map((r) => `<div class=row style='height:36px'><span class=c-sender>${r[1]}</span> <span class=c-subject>${r[2]}</span></div>`).join('');
};
// The commit notification: the live query's changes, used only as a "something changed" ping.
const { LiveQuery } = await import('/live/livelist.js');
const ping = new LiveQuery(notifyURL, 'inbox', { window: [0, 0], prefetch: 0 });
ping.onEvent = (event) => { if (event.type === 'changes' || event.type === 'reset') draw(); };
ping.start();
"""


class WindowServer(http.server.ThreadingHTTPServer):
    """The baseline's API: the window of the list as JSON, by LIMIT/OFFSET on the SQLite file."""


def window_handler(database):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            query = dict(part.split("=") for part in self.path.split("?", 1)[1].split("&"))
            connection = sqlite3.connect(database, timeout=10)
            rows = connection.execute(f"SELECT id, sender, subject FROM conversation WHERE archived = 0 ORDER BY {ORDER} LIMIT ? OFFSET ?",
                                      (int(query["count"]), int(query["start"]))).fetchall()
            connection.close()
            body = json.dumps(rows).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass
    return Handler


def commit_and_time(database, driver, label, seen_script):
    """One-row commits that change a visible row's subject; commit time → first paint showing it."""
    connection = sqlite3.connect(database, timeout=10)
    ids = [row[0] for row in connection.execute(f"SELECT id FROM conversation WHERE archived = 0 ORDER BY {ORDER} LIMIT 10")]
    latencies = []
    for index in range(COMMITS):
        marker = f"bench {label} {index}"
        started = time.time() * 1000
        with connection:
            connection.execute("UPDATE conversation SET subject = ?, version = version + 1 WHERE id = ?", (marker, ids[index % len(ids)]))
        painted = eventually(f"{marker} painted", lambda: driver.execute_script(seen_script, marker), seconds=10)
        latencies.append(painted - started)
        time.sleep(0.1)
    connection.close()
    return latencies


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


# One mutation of the demo page, timed on its clock: `mutate` → answered → its pending row gone
# (the list holds the commit), and the frames the page sent meanwhile.
MUTATE_ONE = """
const done = arguments[arguments.length - 1];
const {live, mutator} = window.livelist;
const row = live.displayed.row(arguments[0]);
const columns = live.displayed.columns;
const unread = Number(row.values[columns.indexOf('unread')]) === 1 ? 0 : 1;
const id = row.values[columns.indexOf('id')];
const sent = window.benchSent.length;
let answered = null;
const started = performance.now();
const finish = () => done({answered: answered - started, settled: performance.now() - started, frames: window.benchSent.length - sent});
const stop = live.observe(() => { if (answered !== null && live.pendingCount === 0) { stop(); finish(); } });
mutator.mutate('setUnread', {id, unread}, {effects: [{list: live, update: {id: row.id, values: {unread}}}]}).then(() => {
  answered = performance.now();
  if (live.pendingCount === 0) { stop(); finish(); }
}, (error) => { stop(); done({error: String(error)}); });
"""


def measure_mutations(server, driver):
    driver.get(server.url)
    eventually("the first state", lambda: driver.execute_script("return window.livelist && window.livelist.live.model.version !== null"), seconds=60)
    driver.execute_script("""
        window.benchSent = [];
        const send = WebSocket.prototype.send;
        WebSocket.prototype.send = function (data) { window.benchSent.push(data); return send.call(this, data); };""")
    runs = []
    for index in range(COMMITS + 10):
        outcome = driver.execute_async_script(MUTATE_ONE, index % 5)
        if "error" in outcome:
            raise RuntimeError(outcome["error"])
        if index >= 10:   # the first ten warm the page and the server
            runs.append(outcome)
        time.sleep(0.05)
    answered = [run["answered"] for run in runs]
    settled = [run["settled"] for run in runs]
    return {
        "bench": "web.mutate.100k", "median_ms": round(statistics.median(settled), 3), "p99_ms": round(percentile(settled, 0.99), 3),
        "answered_median_ms": round(statistics.median(answered), 3), "answered_p99_ms": round(percentile(answered, 0.99), 3),
        "frames_sent_per_mutation": round(sum(run["frames"] for run in runs) / len(runs), 2), "runs": len(runs), "rows": ROWS,
        "clock": "the page's performance.now(): mutate → the pending row gone (median_ms, the list holds the commit) and → answered",
    }


def main():
    folder = tempfile.mkdtemp(prefix="livelist-web-bench-")
    database = os.path.join(folder, "inbox.sqlite")
    server = Server(["--demo", "--db", database, "--rows", str(ROWS), "--writes-per-second", "0"]).start()
    driver = browser()
    try:
        if MUTATIONS:
            print(json.dumps(measure_mutations(server, driver)), flush=True)
            return
        driver.get(server.url)
        eventually("the first state", lambda: driver.execute_script("return window.livelist && window.livelist.live.model.version !== null"), seconds=60)
        driver.execute_script(PAGE_PROBE)
        driver.execute_script("""
            const live = window.livelist.live, receive = live.socket.onmessage;
            window.benchBytes = 0; window.benchFrames = 0;
            live.socket.onmessage = (event) => { window.benchBytes += new TextEncoder().encode(event.data).length; window.benchFrames += 1; receive(event); };""")
        seen = "return window.benchSeen[arguments[0]] ?? null"
        latencies = commit_and_time(database, driver, "livelist", seen)
        frames = driver.execute_script("return [window.benchBytes, window.benchFrames, window.livelist.longTasks.filter((d) => d > 50).length]")

        port = socket.socket()
        port.bind(("127.0.0.1", 0))
        window_port = port.getsockname()[1]
        port.close()
        api = WindowServer(("127.0.0.1", window_port), window_handler(database))
        threading.Thread(target=api.serve_forever, daemon=True).start()
        driver.get(server.url + "live/health")
        driver.execute_script(f"(async () => {{ {BASELINE_PAGE} }})(...arguments)", window_port, f"ws://127.0.0.1:{server.port}/live")
        eventually("the baseline's first window", lambda: driver.execute_script("return window.baselineUpdates > 0"), seconds=30)
        driver.execute_script(PAGE_PROBE)
        baseline = commit_and_time(database, driver, "baseline", seen)
        baseline_bytes = driver.execute_script("return window.baselineBytes / window.baselineUpdates")
        api.shutdown()
        result = {
            "bench": "web.update.100k", "median_ms": round(statistics.median(latencies), 3), "p99_ms": round(percentile(latencies, 0.99), 3),
            "runs": len(latencies), "bytes": round(frames[0] / max(1, frames[1]), 1),
            "baseline": "the page refetches the visible window as JSON (LIMIT/OFFSET) on every commit notification and redraws it",
            "baseline_median_ms": round(statistics.median(baseline), 3), "baseline_p99_ms": round(percentile(baseline, 0.99), 3),
            "baseline_bytes": round(baseline_bytes, 1), "rows": ROWS, "frames_over_50ms": frames[2],
            "clock": "commit in this process (wall clock) → the page's performance.timeOrigin + now() at the frame after the DOM change",
        }
        result["ratio"] = round(result["baseline_median_ms"] / result["median_ms"], 2) if result["median_ms"] > 0 else None
        print(json.dumps(result), flush=True)
    finally:
        driver.quit()
        server.stop()


if __name__ == "__main__":
    main()
