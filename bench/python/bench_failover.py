"""Failover from the L2 to the table, Python client: the first table read of a process that has
not sent a DynamoDB request yet, which is what a reader the L2 has served pays when the cache dies, with and without
the client's SDK warm-up (``TableReader.warm_up``, run in the background when the L2 is configured). Fresh processes,
interleaved; canned HTTP answers from a local server in this process's thread (so the figure is botocore's and the
client's cost, not DynamoDB's). Median wall and CPU time of that first read.

    /usr/bin/python3 bench/python/bench_failover.py [samples=15]
"""
import http.server
import json
import os
import random
import statistics
import subprocess
import sys
import threading

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
ITEM = {"prompt_id": {"S": "summarize"}, "version": {"S": "CURRENT"}, "version_number": {"N": "3"},
        "template_type": {"S": "TEXT"}, "text": {"S": "Summarise {{ticket}} " * 20}, "status": {"S": "ACTIVE"}}

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
import boto3
from cdk_prompt_serving_runtime.stats import Counters
from cdk_prompt_serving_runtime.store import TableReader
client = boto3.client("dynamodb", endpoint_url={endpoint!r}, region_name="us-east-1", aws_access_key_id="x",
                      aws_secret_access_key="x")
reader = TableReader(client, "prompts", 2.0, 1, Counters())
if {warm!r}:
    reader.warm_up()
time.sleep(0.2)  # the L2 serves meanwhile
cpu, wall = time.process_time(), time.perf_counter()
item = reader.get_item("summarize", "CURRENT")
assert item is not None
print(json.dumps({{"ms": (time.perf_counter() - wall) * 1000, "cpu_ms": (time.process_time() - cpu) * 1000}}))
"""


class Canned(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"Item": ITEM}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/x-amz-json-1.0")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def main() -> None:
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    results = {True: [], False: []}
    try:
        for i in range(samples + 1):
            for warm in random.sample([True, False], 2):
                code = CHILD.format(root=ROOT, endpoint=endpoint, warm=warm)
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
                if i > 0:  # the first pair warms the file cache
                    results[warm].append(json.loads(out.stdout))
    finally:
        server.shutdown()
    print(f"| first table read of a process that sent no DynamoDB request yet ({samples} interleaved samples each) "
          "| wall ms (median) | CPU ms (median) |")
    print("| --- | ---: | ---: |")
    for warm, label in ((False, "without the warm-up"), (True, "after `TableReader.warm_up()` (run when the L2 is configured)")):
        ms = statistics.median(r["ms"] for r in results[warm])
        cpu = statistics.median(r["cpu_ms"] for r in results[warm])
        print(f"| {label} | {ms:.1f} | {cpu:.1f} |")


if __name__ == "__main__":
    main()
