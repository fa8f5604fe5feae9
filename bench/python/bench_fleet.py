"""A fleet of Python reader processes against one DynamoDB Local and one redis-server (the L2, plain, no TLS):

1. cold start, empty L2, no write-through: every process reads every prompt at once → table reads per key (across the
   fleet);
2. a second fleet started after the first filled the L2 → table reads per key (goal 0: served by the readers' fills);
3. a change at the source: the invalidation function (bench/python/stream-relay.ts: the bundled handler's source run
   by Node, fed from DynamoDB Local's stream every 250 ms as Lambda polls a shard) writes every change through and
   moves the epoch; every reader of the second fleet watches one prompt (a read every 10 ms) whose CURRENT pointer is
   rewritten at t0 → the time until each reader serves the new version, and the table reads it caused;
4. the cache killed (SIGKILL) under load, and started again empty ``FLEET_OUTAGE_SECONDS`` later: the second fleet
   and a fleet of the same size with the L2 off (``l2=False``) read at the same time, each process in a loop that
   drops each prompt from memory (``invalidate(id)``) and reads it again, every read past memory, then pauses
   100 ms (the Node harness bench/cache-outage.bench.ts does the same) → read p50/p99 during the outage of both
   fleets (goal: the tiered fleet's p99 ≤ 1.2× the L2-off fleet's, 0 failed) and when each reader's L2 hits resume.

Run from the repository root (after ``npm ci``): ``/usr/bin/python3 bench/python/bench_fleet.py``
Settings: ``FLEET_PROCESSES`` (50), ``FLEET_PROMPTS`` (20), ``FLEET_OUTAGE_SECONDS`` (4), ``FLEET_MAX_AGE`` (600 s:
longer than 50 processes take to start on a small machine, so the second fleet finds the first one's fills in date),
``FLEET_PHASES`` (``cold,change,outage``), ``FLEET_OUTAGE_MODE`` (``kill``; ``stop``: SIGSTOP and SIGCONT, a silent host
whose connections stay open and whose calls time out, back with its data).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

PROCESSES = int(os.environ.get("FLEET_PROCESSES", "50"))
PROMPTS = int(os.environ.get("FLEET_PROMPTS", "20"))
OUTAGE_SECONDS = float(os.environ.get("FLEET_OUTAGE_SECONDS", "4"))
OUTAGE_MODE = os.environ.get("FLEET_OUTAGE_MODE", "kill")
PHASES = set(os.environ.get("FLEET_PHASES", "cold,change,outage").split(","))
STREAM_POLL_MS = 250
BEFORE_SECONDS = 4.0
AFTER_SECONDS = 6.0
PAUSE_SECONDS = 0.1


def reader() -> None:
    """One reader process: answers each stdin command with one JSON line."""
    import boto3
    from botocore.config import Config

    from cdk_prompt_serving_runtime import PromptClient
    from cdk_prompt_serving_runtime.valkey import ValkeyL2

    ddb = boto3.session.Session().client(
        "dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT"], region_name="us-east-1",
        aws_access_key_id="local", aws_secret_access_key="local",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=5),
    )
    keys: List[str] = []
    ddb.meta.events.register("before-parameter-build.dynamodb.GetItem",
                             lambda params, **_: keys.append(params["Key"]["prompt_id"]["S"]))
    l2: Any = False
    if os.environ.get("L2") != "off":
        l2 = ValkeyL2("127.0.0.1", int(os.environ["CACHE_PORT"]), tls=False, auth="none", cluster=False, timeout_ms=100)
    client = PromptClient(table_name=os.environ["TABLE"], dynamodb_client=ddb, l2=l2,
                          max_age_seconds=float(os.environ.get("MAX_AGE", "60")), stale_while_revalidate_seconds=0)
    ids = json.loads(os.environ["IDS"])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = command.get("op", "read")
        answer: Dict[str, Any]
        if op == "watch":  # reads one prompt every `interval` s until it serves `version`: when (epoch s)
            seen_at: Optional[float] = None
            until = time.monotonic() + command["timeout"]
            while time.monotonic() < until:
                try:
                    if client.get_prompt(command["id"]).version == command["version"]:
                        seen_at = time.time()
                        break
                except Exception:  # noqa: BLE001 - a failed read is not a serve
                    pass
                time.sleep(command["interval"])
            answer = {"at": seen_at}
        elif op == "load":  # every read past memory; one row per read: [epoch ms at its start, ms, from L2, failed]
            rows: List[List[float]] = []
            errors: Dict[str, int] = {}
            until = time.monotonic() + command["seconds"]
            while time.monotonic() < until:
                for pid in ids:
                    client.invalidate(pid)
                    hits = client.stats()["l2_hits"]
                    at = time.time() * 1000
                    started = time.perf_counter()
                    failed = 0
                    try:
                        client.get_prompt(pid)
                    except Exception as err:  # noqa: BLE001
                        failed = 1
                        message = f"{type(err).__name__}: {str(err)[:120]}"
                        errors[message] = errors.get(message, 0) + 1
                    took = (time.perf_counter() - started) * 1000
                    rows.append([round(at, 1), round(took, 3), int(client.stats()["l2_hits"] > hits), failed])
                time.sleep(command["pause"])
            answer = {"rows": rows, "errors": errors}
        else:  # every prompt once
            served = failed = 0
            errors_seen: List[str] = []
            for pid in ids:
                try:
                    client.get_prompt(pid)
                    served += 1
                except Exception as err:  # noqa: BLE001
                    failed += 1
                    if len(errors_seen) < 3:
                        errors_seen.append(f"{type(err).__name__}: {err}")
            answer = {"served": served, "failed": failed, "errors": errors_seen}
        stats = client.stats()
        answer.update(tableReads=len([k for k in keys if k != "#catalog"]), l2Errors=stats["l2_errors"],
                      l2Hits=stats["l2_hits"], probes=getattr(l2, "probes", 0))
        print(json.dumps(answer), flush=True)
        keys.clear()


def start_fleet(env: Dict[str, str]) -> List[subprocess.Popen]:  # type: ignore[type-arg]
    procs = [subprocess.Popen([sys.executable, __file__, "--reader"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env) for _ in range(PROCESSES)]
    for p in procs:
        assert json.loads(p.stdout.readline())["ready"]  # type: ignore[union-attr]
    return procs


def send(procs: List[subprocess.Popen], command: Dict[str, Any]) -> None:  # type: ignore[type-arg]
    for p in procs:
        p.stdin.write(json.dumps(command) + "\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]


def answers(procs: List[subprocess.Popen]) -> List[Dict[str, Any]]:  # type: ignore[type-arg]
    return [json.loads(p.stdout.readline()) for p in procs]  # type: ignore[union-attr]


def ask(procs: List[subprocess.Popen], command: Dict[str, Any]) -> List[Dict[str, Any]]:  # type: ignore[type-arg]
    send(procs, command)
    return answers(procs)


def pct(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class StreamRelay:
    """bench/python/stream-relay.ts in its own Node process (its output in a file, so a full pipe never blocks it)."""

    def __init__(self, endpoint: str, stream_arn: str, table: str, cache_endpoint: str) -> None:
        self.log = tempfile.NamedTemporaryFile("w+", prefix="stream-relay-", suffix=".log", delete=False)
        tsx = os.path.join(ROOT, "node_modules", ".bin", "tsx")
        self.process = subprocess.Popen(
            [tsx, os.path.join(ROOT, "bench", "python", "stream-relay.ts"), endpoint, stream_arn, table, cache_endpoint,
             str(STREAM_POLL_MS)], cwd=ROOT, stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while '"ready":true' not in open(self.log.name, encoding="utf-8").read():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"stream relay did not start: {open(self.log.name, encoding='utf-8').read()[-2000:]}")
            time.sleep(0.2)

    def deliveries(self) -> int:
        return open(self.log.name, encoding="utf-8").read().count('"delivered"')

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.unlink(self.log.name)


def main() -> None:
    from services import DynamoDBLocal, RedisServer, create_serving_table
    from test_labels import publish, text

    local = DynamoDBLocal()
    redis_server = RedisServer()
    fleets: List[List[subprocess.Popen]] = []  # type: ignore[type-arg]
    relay: Optional[StreamRelay] = None
    try:
        admin = local.client()
        table = create_serving_table(admin, "fleet", stream=True)
        stream_arn = admin.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        ids = [f"fleet-{i:02d}" for i in range(PROMPTS)]
        for pid in ids:
            publish(admin, table, pid, 1, text(f"Fleet prompt {pid} for {{{{name}}}}"))
        env = {**os.environ, "DYNAMODB_ENDPOINT": local.endpoint, "CACHE_PORT": str(redis_server.port), "TABLE": table,
               "IDS": json.dumps(ids), "MAX_AGE": os.environ.get("FLEET_MAX_AGE", "600")}
        print(f"{PROCESSES} reader processes × {PROMPTS} prompts, python {sys.version.split()[0]}, max_age {env['MAX_AGE']} s, "
              f"L2 = redis-server (plain), DynamoDB Local; load at the start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        first = start_fleet(env)
        fleets.append(first)
        cold = ask(first, {})
        reads = sum(r["tableReads"] for r in cold)
        if any(r["errors"] for r in cold):
            print("   errors:", next(r["errors"] for r in cold if r["errors"]))
        print(f"1. cold start, empty L2: {reads} table reads for {PROMPTS} keys ({reads / PROMPTS:.2f} per key), "
              f"failed {sum(r['failed'] for r in cold)}")
        second = start_fleet(env)
        fleets.append(second)
        warm = ask(second, {})
        reads = sum(r["tableReads"] for r in warm)
        print(f"2. second fleet, L2 filled by the first: {reads} table reads ({reads / PROMPTS:.2f} per key); "
              f"L2 hits {sum(r['l2Hits'] for r in warm)}, L2 errors (timeouts included) {sum(r['l2Errors'] for r in warm)}")
        for proc in first:  # idle from here on: out of the way of the measured fleets
            proc.kill()

        relay = StreamRelay(local.endpoint, stream_arn, table, f"127.0.0.1:{redis_server.port}")
        time.sleep(3 * STREAM_POLL_MS / 1000 + 2)  # the prompts' records written through, the epoch moved
        print(f"   stream relay started: {relay.deliveries()} deliveries of the prompts' records so far")
        ask(second, {})  # every reader has seen the epoch and its stream values

        if "change" in PHASES:
            changed = ids[0]
            send(second, {"op": "watch", "id": changed, "version": 2, "timeout": 20, "interval": 0.01})
            time.sleep(1.5)  # every reader is watching
            t0 = time.time()
            publish(admin, table, changed, 2, text(f"Fleet prompt {changed} v2 for {{{{name}}}}"))
            watched = answers(second)
            served = [r["at"] - t0 for r in watched if r["at"] is not None]
            print(f"3. a change at the source, {PROCESSES} readers (epoch poll 500 ms, stream polled every {STREAM_POLL_MS} ms): "
                  f"time until each reader serves it p50 {pct(served, 0.5) * 1000:.0f} ms, p99 {pct(served, 0.99) * 1000:.0f} ms, "
                  f"max {max(served) * 1000:.0f} ms; readers that never served it (20 s) {len(watched) - len(served)}; "
                  f"table reads caused {sum(r['tableReads'] for r in watched)}")

        if "outage" in PHASES:
            off = start_fleet({**env, "L2": "off"})
            fleets.append(off)
            duration = BEFORE_SECONDS + OUTAGE_SECONDS + AFTER_SECONDS
            command = {"op": "load", "seconds": duration, "pause": PAUSE_SECONDS}
            results: Dict[str, List[Dict[str, Any]]] = {}
            threads = [threading.Thread(target=lambda name=name, fleet=fleet: results.__setitem__(name, ask(fleet, command)))
                       for name, fleet in (("tiered", second), ("off", off))]
            for t in threads:
                t.start()
            time.sleep(BEFORE_SECONDS)
            killed_at = time.time() * 1000
            if OUTAGE_MODE == "stop":  # a silent host: connections stay open, calls time out; it comes back with its data
                redis_server.process.send_signal(signal.SIGSTOP)
                time.sleep(OUTAGE_SECONDS)
                redis_server.process.send_signal(signal.SIGCONT)
            else:
                redis_server.process.send_signal(signal.SIGKILL)
                redis_server.process.wait()
                time.sleep(OUTAGE_SECONDS)
                redis_server = RedisServer(port=redis_server.port)
            restarted_at = time.time() * 1000
            for t in threads:
                t.join()
            what = "SIGSTOPped under load and SIGCONTed" if OUTAGE_MODE == "stop" else "SIGKILLed under load and started again (empty)"
            print(f"4. the cache {what} {(restarted_at - killed_at) / 1000:.1f} s later; "
                  f"{PROCESSES} + {PROCESSES} processes each reading {PROMPTS} prompts past memory, then {PAUSE_SECONDS * 1000:.0f} ms pause:")
            p99s = {}
            for name in ("tiered", "off"):
                rows = [row for r in results[name] for row in r["rows"]]
                during = [row[1] for row in rows if killed_at <= row[0] < restarted_at]
                before = [row[1] for row in rows if row[0] < killed_at]
                failed = sum(row[3] for row in rows)
                errors: Dict[str, int] = {}
                for r in results[name]:
                    for message, n in r["errors"].items():
                        errors[message] = errors.get(message, 0) + n
                p99s[name] = pct(during, 0.99)
                print(f"   {name:6}: reads {len(rows)}, failed {failed}; during the outage ({len(during)} reads) p50 "
                      f"{pct(during, 0.5):.2f} ms, p99 {pct(during, 0.99):.2f} ms, max {max(during):.0f} ms; before it p50 "
                      f"{pct(before, 0.5):.2f} ms, p99 {pct(before, 0.99):.2f} ms" + (f"; errors {errors}" if errors else ""))
                if name == "tiered":
                    resume: List[float] = []
                    for r in results[name]:
                        first_hit = next((row[0] for row in r["rows"] if row[0] >= restarted_at and row[2]), None)
                        if first_hit is not None:
                            resume.append(first_hit - restarted_at)
                    print(f"   tiered: L2 hits resumed after the restart in {len(resume)} of {len(results[name])} readers, "
                          f"p50 {pct(resume, 0.5):.0f} ms, p99 {pct(resume, 0.99):.0f} ms; L2 errors (breaker skips included) "
                          f"{sum(r['l2Errors'] for r in results[name])}, breaker probes {sum(r['probes'] for r in results[name])}")
            print(f"   outage p99, tiered / L2 off: {p99s['tiered'] / p99s['off']:.2f}×")
        print(f"load at the end (1/5/15 min): {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        for fleet in fleets:
            for proc in fleet:
                proc.kill()
        if relay is not None:
            relay.stop()
        redis_server.stop()
        local.stop()


if __name__ == "__main__":
    reader() if "--reader" in sys.argv else main()
