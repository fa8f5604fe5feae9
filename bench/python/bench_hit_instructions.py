"""Instructions per cached ``get_prompt`` hit, counted by valgrind (callgrind), against the floor of
``bench_client.py`` (a closure doing ``dict.get`` plus a ``time.time()`` expiry check): a measure that the machine's
load does not move, beside the timed ratios of ``bench_client.py``.

    /usr/bin/python3 bench/python/bench_hit_instructions.py [base-commit]

Each figure is (instructions of a run of 100,000 calls − those of a run of none) / 100,000, the calling loop included,
in a child interpreter with ``PYTHONHASHSEED=0`` (dict probing, hence the count, depends on the hash seed). The
client's hot path is the index of fresh copies (``fresh_index.py``) built directly, 8 ids, each with CURRENT, version 1
and label ``production``: no DynamoDB, no client around it. With a commit, its package (``git archive`` into
``.tmp/bench-hit-instructions/<sha>``) is counted too. Needs valgrind; prints markdown.
"""
import io
import os
import re
import subprocess
import sys
import tarfile
import time
from typing import Any, Callable, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALLS = 100_000
SHAPES = {"c": "`get_prompt(id)` (CURRENT)", "p": "`get_prompt(id, 1)`", "l": '`get_prompt(id, label="production")`'}


def child(package_root: str, shape: str, calls: int) -> None:
    """Builds the getter (or the floor) and calls it ``calls`` times in the shape's loop."""
    ids = [f"prompt-{i}" for i in range(8)]
    until = time.time() + 3600
    get: Callable[..., Any]
    if package_root == "floor":
        floor_cache = {pid: (object(), until) for pid in ids}

        def floor_get(pid: str, version: Any = None, label: Any = None) -> Any:
            entry = floor_cache.get(pid)
            if entry is not None and entry[1] > time.time():
                return entry[0]
            raise KeyError(pid)

        get = floor_get
    else:
        sys.path.insert(0, package_root)
        from cdk_prompt_serving_runtime.fresh_index import FreshIndex
        from cdk_prompt_serving_runtime.targets import current, labeled, pinned

        index = FreshIndex()
        for pid in ids:
            for target in (current(pid), pinned(pid, 1), labeled(pid, "production")):
                index.put(target, target.key, (object(), until))  # type: ignore[arg-type]

        def read(*args: Any) -> Any:
            raise AssertionError(f"a slow read: {args}")

        get = index.getter(time.time, read)[0]
    warm_up = [ids[i % 8] for i in range(100)]  # in both runs: the specializing interpreter settles first
    for keys in (warm_up, [ids[i % 8] for i in range(calls)]):
        if shape == "c":
            for k in keys:
                get(k)
        elif shape == "p":
            for k in keys:
                get(k, 1)
        else:
            for k in keys:
                get(k, label="production")


def instructions(package_root: str, shape: str, calls: int) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, os.path.abspath(__file__),
         "--child", package_root, shape, str(calls)],
        env=dict(os.environ, PYTHONHASHSEED="0"), capture_output=True, text=True, check=True)
    match = re.search(r"Collected : (\d+)", done.stderr)
    assert match, done.stderr
    return int(match.group(1))


def per_call(package_root: str, shape: str) -> float:
    return (instructions(package_root, shape, CALLS) - instructions(package_root, shape, 0)) / CALLS


def base_root(commit: str) -> str:
    sha = subprocess.run(["git", "rev-parse", "--short", commit], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    root = os.path.join(ROOT, ".tmp", "bench-hit-instructions", sha)
    if not os.path.exists(os.path.join(root, "cdk_prompt_serving_runtime", "__init__.py")):
        archive = subprocess.run(["git", "archive", sha, "python/cdk_prompt_serving_runtime"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root)
        os.rename(os.path.join(root, "python", "cdk_prompt_serving_runtime"), os.path.join(root, "cdk_prompt_serving_runtime"))
    return root


def main(base: Optional[str]) -> None:
    roots: Dict[str, str] = {"floor": "floor", "now": os.path.join(ROOT, "python")}
    if base is not None:
        roots[f"at {base}"] = base_root(base)
    names = list(roots)
    print(f"python {sys.version.split()[0]}; instructions per call, {CALLS:,} calls, the loop included\n")
    print("| cached read | " + " | ".join(names) + " | × floor (" + ", ".join(names[1:]) + ") |")
    print("| --- |" + " ---: |" * (len(names) + 1))
    for shape, title in SHAPES.items():
        counts: List[float] = [per_call(roots[name], shape) for name in names]
        ratios = ", ".join(f"{c / counts[0]:.2f}×" for c in counts[1:])
        print(f"| {title} | " + " | ".join(f"{c:.0f}" for c in counts) + f" | {ratios} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else None)
