"""Labels in the Python client (the Python side of bench/labels.bench.ts): a cached labeled read
against a cached CURRENT read, and a rollout-assigned read (with a stickiness key) against a plain labeled read, side
by side in one run against a DynamoDB Local started here. Interleaved rounds, medians.

Run from the repository root (after ``npm ci``): ``/usr/bin/python3 bench/python/bench_labels.py``
"""
import os
import sys
import time
from typing import Callable, Dict, List

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

from cdk_prompt_serving_runtime import PromptClient  # noqa: E402
from services import DynamoDBLocal, create_serving_table, set_local_aws_environment  # noqa: E402
from test_labels import V1, V2, publish, rollout_map, write_label  # noqa: E402

N = 200_000
ROUNDS = 7


def main() -> None:
    set_local_aws_environment()
    local = DynamoDBLocal()
    try:
        ddb = local.client()
        table = create_serving_table(ddb, "pybench-labels")
        ids = [f"prompt-{i}" for i in range(8)]
        for i in ids:
            publish(ddb, table, i, 1, V1)
            publish(ddb, table, i, 2, V2)
            write_label(ddb, table, i, "production", 1, V1)
            write_label(ddb, table, i, "rolling", 1, V1, rollout=rollout_map("r-bench", 2, V2, 5000))
        client = PromptClient(table_name=table, dynamodb_client=ddb, l2=False, max_age_seconds=3600)
        client.preload(ids, labels=["production", "rolling"])
        keys = [f"user-{k}" for k in range(1024)]

        def current() -> None:
            for n in range(N):
                client.get_prompt(ids[n % 8])

        def labeled() -> None:
            for n in range(N):
                client.get_prompt(ids[n % 8], label="production")

        def keyed() -> None:
            for n in range(N):
                client.get_prompt(ids[n % 8], label="rolling", stickiness_key=keys[n % 1024])

        loops: Dict[str, Callable[[], None]] = {
            "get_prompt(id): CURRENT": current,
            'get_prompt(id, label="production")': labeled,
            'get_prompt(id, label=…, stickiness_key=…), rollout at 50 %': keyed,
        }
        ns: Dict[str, List[float]] = {name: [] for name in loops}
        for _ in range(ROUNDS):
            for name, loop in loops.items():
                started = time.perf_counter()
                loop()
                ns[name].append((time.perf_counter() - started) / N * 1e9)
        med = {name: sorted(v)[len(v) // 2] for name, v in ns.items()}
        names = list(loops)
        print(f"Python {sys.version.split()[0]}, {ROUNDS} rounds of {N:,} cached reads, medians:\n")
        print("| read | ns/op | ratio |\n|---|---:|---:|")
        print(f"| {names[0]} | {med[names[0]]:.0f} | 1.00 |")
        print(f"| {names[1]} | {med[names[1]]:.0f} | {med[names[1]] / med[names[0]]:.2f} × CURRENT |")
        print(f"| {names[2]} | {med[names[2]]:.0f} | {med[names[2]] / med[names[1]]:.2f} × plain labeled read |")
        print(f"\nstats: {client.stats()}")
    finally:
        local.stop()


if __name__ == "__main__":
    main()
