"""A fleet of Python reader processes against one DynamoDB Local and one redis-server (the L2, plain, no TLS):

1. cold start, empty L2: every process reads every prompt at once → table reads per key (across the fleet);
2. a second fleet started after the first filled the L2 → table reads per key (goal 0: served by the readers' fills);
3. the cache killed, then each process of the second fleet drops its memory (``invalidate()``) and reads for
   ``FLEET_OUTAGE_SECONDS``: reads served and failed, p50/p99 of a read after the kill.

Change propagation is not measured here: it needs the invalidation function's stream write-through (the Node fleet,
bench/cache-fleet.bench.ts, measures it with test/support/stream-poller.ts).

Run from the repository root (after ``npm ci``): ``/usr/bin/python3 bench/python/bench_fleet.py``
Settings: ``FLEET_PROCESSES`` (50), ``FLEET_PROMPTS`` (20), ``FLEET_OUTAGE_SECONDS`` (3), ``FLEET_MAX_AGE`` (600 s:
longer than 50 processes take to start on a small machine, so the second fleet finds the first one's fills in date).
"""
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

PROCESSES = int(os.environ.get("FLEET_PROCESSES", "50"))
PROMPTS = int(os.environ.get("FLEET_PROMPTS", "20"))
OUTAGE_SECONDS = float(os.environ.get("FLEET_OUTAGE_SECONDS", "3"))


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
    l2 = ValkeyL2("127.0.0.1", int(os.environ["CACHE_PORT"]), tls=False, auth="none", cluster=False, timeout_ms=100)
    client = PromptClient(table_name=os.environ["TABLE"], dynamodb_client=ddb, l2=l2,
                          max_age_seconds=float(os.environ.get("MAX_AGE", "60")), stale_while_revalidate_seconds=0)
    ids = json.loads(os.environ["IDS"])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command.get("invalidate"):
            client.invalidate()  # memory dropped: every read goes to the L2, then the table
        served = failed = 0
        errors: List[str] = []
        latencies: List[float] = []
        until = time.monotonic() + command.get("seconds", 0)
        while True:
            for pid in ids:
                started = time.perf_counter()
                try:
                    client.get_prompt(pid)
                    served += 1
                except Exception as err:  # noqa: BLE001
                    failed += 1
                    if len(errors) < 3:
                        errors.append(f"{type(err).__name__}: {err}")
                latencies.append((time.perf_counter() - started) * 1000)
            if time.monotonic() >= until:
                break
            time.sleep(0.05)
        table_keys = [k for k in keys if k != "#catalog"]
        stats = client.stats()
        print(json.dumps({"served": served, "failed": failed, "latencies": latencies, "tableReads": len(table_keys),
                          "l2Errors": stats["l2_errors"], "l2Hits": stats["l2_hits"],
                          "errors": errors}),
              flush=True)
        keys.clear()


def start_fleet(env: Dict[str, str]) -> List[subprocess.Popen]:  # type: ignore[type-arg]
    procs = [subprocess.Popen([sys.executable, __file__, "--reader"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env) for _ in range(PROCESSES)]
    for p in procs:
        assert json.loads(p.stdout.readline())["ready"]  # type: ignore[union-attr]
    return procs


def ask(procs: List[subprocess.Popen], command: Dict[str, Any]) -> List[Dict[str, Any]]:  # type: ignore[type-arg]
    for p in procs:
        p.stdin.write(json.dumps(command) + "\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
    return [json.loads(p.stdout.readline()) for p in procs]  # type: ignore[union-attr]


def main() -> None:
    from services import DynamoDBLocal, RedisServer, create_serving_table
    from test_labels import publish, text

    local = DynamoDBLocal()
    redis_server = RedisServer()
    fleets: List[List[subprocess.Popen]] = []  # type: ignore[type-arg]
    try:
        admin = local.client()
        table = create_serving_table(admin, "fleet")
        ids = [f"fleet-{i}" for i in range(PROMPTS)]
        for pid in ids:
            publish(admin, table, pid, 1, text(f"Fleet prompt {pid} for {{{{name}}}}"))
        env = {**os.environ, "DYNAMODB_ENDPOINT": local.endpoint, "CACHE_PORT": str(redis_server.port), "TABLE": table,
               "IDS": json.dumps(ids), "MAX_AGE": os.environ.get("FLEET_MAX_AGE", "600")}
        print(f"{PROCESSES} reader processes × {PROMPTS} prompts, python {sys.version.split()[0]}, max_age {env['MAX_AGE']} s, "
              "L2 = redis-server (plain), DynamoDB Local")
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
        redis_server.stop()
        outage = ask(second, {"seconds": OUTAGE_SECONDS, "invalidate": True})
        latencies = sorted(x for r in outage for x in r["latencies"])
        p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
        print(f"3. cache killed, {OUTAGE_SECONDS:.0f} s of reads per process: served {sum(r['served'] for r in outage)}, "
              f"failed {sum(r['failed'] for r in outage)}, read p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms, "
              f"max {latencies[-1]:.0f} ms, mean {statistics.mean(latencies):.2f} ms, table reads "
              f"{sum(r['tableReads'] for r in outage)}")
    finally:
        for fleet in fleets:
            for proc in fleet:
                proc.kill()
        redis_server.stop()
        local.stop()


if __name__ == "__main__":
    reader() if "--reader" in sys.argv else main()
