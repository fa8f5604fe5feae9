"""Labeled reads with provenance, Python: cached ``get_prompt(id)``, ``get_prompt(id,
label=...)`` and a rollout-assigned read with a stickiness key, each against the same read of the package of commit
``BASE`` (before labels and provenance were joined), side by side in one interpreter, interleaved rounds in shuffled
order, medians of the per-round ratios. ``on_read`` unset.

    /usr/bin/python3 bench/python/bench_labels_provenance.py [base-commit]

The baseline package is taken with ``git archive`` into ``.tmp/bench-baseline/<sha>/python/base`` under another name
(its imports are relative), as ``bench/provenance.bench.ts`` does. Starts its own DynamoDB Local; prints markdown.
"""
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import time
from typing import Any, Callable, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = sys.argv[1] if len(sys.argv) > 1 else "71139a1"
ROUNDS = 9
N = 100_000


def baseline_dir() -> str:
    sha = subprocess.run(["git", "rev-parse", "--short", BASE], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    base = os.path.join(ROOT, ".tmp", "bench-baseline", sha, "python", "base")
    target = os.path.join(base, "cdk_prompt_serving_runtime_base")
    if not os.path.exists(os.path.join(target, "__init__.py")):
        archive = subprocess.run(["git", "archive", sha, "python/cdk_prompt_serving_runtime"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        extract = os.path.join(ROOT, ".tmp", "bench-baseline", sha, "extract")
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(extract)
        os.makedirs(base, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)
        os.rename(os.path.join(extract, "python", "cdk_prompt_serving_runtime"), target)
    return base


sys.path[:0] = [baseline_dir(), os.path.join(ROOT, "python"), os.path.join(ROOT, "python", "tests")]

from cdk_prompt_serving_runtime import PromptClient  # noqa: E402
from cdk_prompt_serving_runtime_base import PromptClient as Before  # noqa: E402
from services import DynamoDBLocal, create_serving_table, set_local_aws_environment  # noqa: E402
from test_labels import V1, V2, publish, rollout_map, write_label  # noqa: E402


def main() -> None:
    set_local_aws_environment()
    local = DynamoDBLocal()
    try:
        ddb = local.client()
        table = create_serving_table(ddb, "pybench-labels-provenance")
        ids = [f"prompt-{i}" for i in range(8)]
        for i in ids:
            publish(ddb, table, i, 1, V1)
            publish(ddb, table, i, 2, V2)
            write_label(ddb, table, i, "production", 1, V1)
            write_label(ddb, table, i, "rolling", 1, V1, rollout=rollout_map("r-bench", 2, V2, 5000))
        clients: Dict[str, Any] = {}
        for name, cls in (("before", Before), ("now", PromptClient)):
            client = cls(table_name=table, dynamodb_client=ddb, l2=False, max_age_seconds=3600)
            client.preload(ids, labels=["production", "rolling"])
            clients[name] = client
        keys = [f"user-{k}" for k in range(1024)]

        def current(c: Any) -> None:
            for n in range(N):
                c.get_prompt(ids[n % 8])

        def labeled(c: Any) -> None:
            for n in range(N):
                c.get_prompt(ids[n % 8], label="production")

        def keyed(c: Any) -> None:
            for n in range(N):
                c.get_prompt(ids[n % 8], label="rolling", stickiness_key=keys[n % 1024])

        reads: Dict[str, Callable[[Any], None]] = {
            "get_prompt(id): CURRENT": current,
            'get_prompt(id, label="production")': labeled,
            "get_prompt(id, label=…, stickiness_key=…), rollout at 50 %": keyed,
        }
        for c in clients.values():
            for read in reads.values():
                read(c)  # warm-up
        ns: Dict[str, List[float]] = {}
        ratios: Dict[str, List[float]] = {name: [] for name in reads}
        for _ in range(ROUNDS):
            t: Dict[str, float] = {}
            order = [(r, c) for r in reads for c in clients]
            random.shuffle(order)
            for r, c in order:
                started = time.perf_counter()
                reads[r](clients[c])
                t[f"{r}/{c}"] = (time.perf_counter() - started) / N * 1e9
                ns.setdefault(f"{r}/{c}", []).append(t[f"{r}/{c}"])
            for r in reads:
                ratios[r].append(t[f"{r}/now"] / t[f"{r}/before"])

        def med(values: List[float]) -> float:
            return sorted(values)[len(values) // 2]

        print(f"Python {sys.version.split()[0]}, {ROUNDS} interleaved rounds of {N:,} cached reads over 8 ids, medians:\n")
        print(f"| cached read | before (commit {BASE}), ns/op | now, ns/op | now × before |\n|---|---:|---:|---:|")
        for r in reads:
            print(f"| {r} | {med(ns[f'{r}/before']):.0f} | {med(ns[f'{r}/now']):.0f} | {med(ratios[r]):.2f}× |")
    finally:
        local.stop()


if __name__ == "__main__":
    main()
