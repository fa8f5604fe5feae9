"""Benchmark of the Python runtime client, side by side in one run against a real DynamoDB Local:

1. cached ``get_prompt`` (CURRENT, pinned, a label without a rollout) against the floor: a function doing a ``dict``
   lookup plus an expiry check against ``time.time()``, called in the same loop shape; each round times the floor
   and the client back to back and keeps their ratio (goal: ≤ 1.2×);
2. 100 threads cold-reading one id → GetItem calls for it (botocore event hook);
3. 1000 reads of an unknown id → GetItem calls, without and with the catalog loaded;
4. the store down after the TTL → reads served (the last good copy) and failed.

Run from the repository root (after ``npm ci``): ``/usr/bin/python3 bench/python/bench_client.py``
Prompts are written by the real sync engine (test/conformance/sync-directory.ts) from examples/prompts/ plus 5
generated ones. Prints a Markdown table.
"""
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

from cdk_prompt_serving_runtime import PromptClient, PromptNotFoundError  # noqa: E402
from services import CallCounter, DynamoDBLocal, create_serving_table, run_sync  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "11"))
READS = int(os.environ.get("BENCH_READS", "200000"))


def time_loop(get: Callable[..., Any], keys: List[Any]) -> float:
    """ns per call of ``get(key)`` over ``keys`` (one pass)."""
    started = time.perf_counter_ns()
    for k in keys:
        get(k)
    return (time.perf_counter_ns() - started) / len(keys)


def time_loop_pinned(get: Callable[..., Any], keys: List[Any]) -> float:
    """ns per call of ``get(key, 1)`` over ``keys``: the same loop shape with a version argument."""
    started = time.perf_counter_ns()
    for k in keys:
        get(k, 1)
    return (time.perf_counter_ns() - started) / len(keys)


def time_loop_labeled(get: Callable[..., Any], keys: List[Any]) -> float:
    """ns per call of ``get(key, label="production")`` over ``keys``."""
    started = time.perf_counter_ns()
    for k in keys:
        get(k, label="production")
    return (time.perf_counter_ns() - started) / len(keys)


def write_labels(ddb: Any, table: str, ids: List[str]) -> None:
    """A ``production`` label on version 1 of each prompt, copied from the version item as the label writer does."""
    for pid in ids:
        item = ddb.get_item(TableName=table, Key={"prompt_id": {"S": pid}, "version": {"S": "v000001"}})["Item"]
        item.update({"version": {"S": "LABEL#production"}, "label": {"S": "production"}, "status": {"S": "ACTIVE"},
                     "moved_at": {"S": "2026-12-01T18:00:00.000Z"}, "moved_by": {"S": "bench"}})
        ddb.put_item(TableName=table, Item=item)


def main() -> None:
    local = DynamoDBLocal()
    directory = tempfile.mkdtemp(prefix="bench-prompts-")
    try:
        shutil.copytree(os.path.join(ROOT, "examples", "prompts"), directory, dirs_exist_ok=True)
        for i in range(5):
            with open(os.path.join(directory, f"bench-{i}.md"), "w", encoding="utf-8") as f:
                f.write(f"Benchmark prompt {i} for {{{{name}}}}.")
        admin = local.client()
        table = create_serving_table(admin, "bench")
        report = run_sync(local.endpoint, table, directory)
        ids = sorted(report["writtenIds"])
        print(f"synced {len(ids)} prompts with the real sync engine: {', '.join(ids)}\n")

        # 1. cached reads against the floor
        client = PromptClient(table_name=table, dynamodb_client=local.client(), max_age_seconds=3600)
        write_labels(admin, table, ids)
        client.preload(ids, labels=["production"])
        for pid in ids:
            client.get_prompt(pid, 1)
            client.get_prompt(pid, label="production")
        floor_cache: Dict[str, Any] = {pid: (client.get_prompt(pid), time.time() + 3600) for pid in ids}

        def floor_get(pid: str, version: Any = None, label: Any = None) -> Any:
            entry = floor_cache.get(pid)
            if entry is not None and entry[1] > time.time():
                return entry[0]
            raise KeyError(pid)

        keys = [ids[i % len(ids)] for i in range(READS)]
        contenders: Dict[str, Callable[[], float]] = {
            "floor: dict lookup + expiry check": lambda: time_loop(floor_get, keys),
            "PromptClient.get_prompt (CURRENT)": lambda: time_loop(client.get_prompt, keys),
            "floor, called as (id, 1)": lambda: time_loop_pinned(floor_get, keys),
            "PromptClient.get_prompt (version=1)": lambda: time_loop_pinned(client.get_prompt, keys),
            "floor, called as (id, label=…)": lambda: time_loop_labeled(floor_get, keys),
            "PromptClient.get_prompt (label=…)": lambda: time_loop_labeled(client.get_prompt, keys),
        }
        floors = {name: ("floor, called as (id, 1)" if "version" in name or "(id, 1)" in name
                         else "floor, called as (id, label=…)" if "label" in name
                         else "floor: dict lookup + expiry check") for name in contenders}
        for run in contenders.values():  # warm-up
            run()
        print(f"python {sys.version.split()[0]} ({sys.executable})")
        samples: Dict[str, List[float]] = {name: [] for name in contenders}
        ratios: Dict[str, List[float]] = {name: [] for name in contenders}
        pairs = [(name, floors[name]) for name in contenders if floors[name] != name]
        for _ in range(ROUNDS):
            random.shuffle(pairs)
            for name, floor in pairs:  # each client figure is timed right next to its floor, in a random order
                first, second = (name, floor) if random.random() < 0.5 else (floor, name)
                this_pair = {first: contenders[first](), second: contenders[second]()}
                for n, ns in this_pair.items():
                    samples[n].append(ns)
                ratios[name].append(this_pair[name] / this_pair[floor])
                ratios[floor].append(1.0)
        print(f"| cached read ({ROUNDS} rounds × {READS:,} reads, shuffled) | ns/op (median) | × floor (median of rounds) |")
        print("| --- | ---: | ---: |")
        for name in contenders:
            print(f"| {name} | {statistics.median(samples[name]):.0f} | {statistics.median(ratios[name]):.2f}× |")

        # 2. 100 threads cold-reading one id
        ddb = local.client()
        counter = CallCounter(ddb)
        cold = PromptClient(table_name=table, dynamodb_client=ddb)
        barrier = threading.Barrier(100)
        failures: List[BaseException] = []

        def read_one() -> None:
            barrier.wait()
            try:
                cold.get_prompt(ids[0])
            except BaseException as err:  # noqa: BLE001
                failures.append(err)

        threads = [threading.Thread(target=read_one) for _ in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        prompt_reads = sum(1 for k in counter.keys if k == f"{ids[0]}/CURRENT")
        print(f"\n100 threads cold-reading '{ids[0]}': GetItem for it {prompt_reads}, catalog {counter.keys.count('#catalog/CURRENT')}, "
              f"failed {len(failures)}")

        # 3. 1000 reads of an unknown id
        for preload in (False, True):
            ddb = local.client()
            counter = CallCounter(ddb)
            c = PromptClient(table_name=table, dynamodb_client=ddb)
            if preload:
                c.preload()
                counter.reset()
            for _ in range(1000):
                try:
                    c.get_prompt("no-such-prompt")
                except PromptNotFoundError:
                    pass
            print(f"1000 reads of an unknown id, catalog {'loaded first' if preload else 'not loaded'}: "
                  f"GetItem {counter['GetItem']} ({', '.join(counter.keys) or 'none'})")

        # 4. the store down after the TTL
        now = [time.time()]
        down = PromptClient(table_name=table, dynamodb_client=local.client(timeout=0.5), max_age_seconds=60,
                            clock=lambda: now[0], request_timeout_ms=500)
        down.preload(ids)
        local.stop()
        now[0] += 61 + 60 + 1  # past max_age and stale-while-revalidate
        served = failed = 0
        latencies: List[float] = []
        for i in range(1000):
            started = time.perf_counter()
            try:
                prompt = down.get_prompt(ids[i % len(ids)])
                served += prompt.stale
            except Exception:  # noqa: BLE001
                failed += 1
            latencies.append((time.perf_counter() - started) * 1000)
        latencies.sort()
        print(f"table down after the TTL, 1000 reads of {len(ids)} prompts read before: served stale {served}, failed {failed}; "
              f"slowest read {latencies[-1]:.0f} ms (a first read waits for its failed table read, retries included, "
              f"within request_timeout_ms=500), p50 {latencies[500] * 1000:.1f} µs")
    finally:
        local.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
