"""One Python reader process of the governed rollout fleet test (test/governance/fleet-rollout.test.ts): a
``PromptClient`` at its default settings (epoch read every 500 ms) over the Valkey adapter (TLS, cluster mode, the
reader ACL user) and its own DynamoDB client. It polls one label for a fixed set of stickiness keys every
``POLL_MS`` and writes ONE JSON line per poll to stdout, the same protocol as rollout-fleet-reader.ts:
``{"t": epoch ms, "v": "<version served per key>", "a": "<arm per key: A, B, or - without a rollout>", "e":
[rollout_faults, store_errors, l2_errors]}``. It stops
when stdin closes, or after ``MAX_LIFETIME_MS``.

Environment: TABLE_NAME, DYNAMODB_ENDPOINT, CACHE_PORT, CACHE_CA_FILE, CACHE_USER, PROMPT_ID, LABEL, KEYS (a JSON
list), POLL_MS, MAX_LIFETIME_MS, PYTHON_CLIENT_PATH (the folder holding ``cdk_prompt_serving_runtime``)."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.environ["PYTHON_CLIENT_PATH"])

from cdk_prompt_serving_runtime import PromptClient  # noqa: E402
from cdk_prompt_serving_runtime.valkey import ValkeyL2  # noqa: E402


def main() -> None:
    import boto3
    from botocore.config import Config

    env = os.environ
    keys = json.loads(env["KEYS"])
    poll_s = float(env.get("POLL_MS", "50")) / 1000
    deadline = time.time() + float(env.get("MAX_LIFETIME_MS", "180000")) / 1000
    stopping = threading.Event()

    def watch_stdin() -> None:
        for _ in sys.stdin:
            pass
        stopping.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    ddb = boto3.session.Session().client(
        "dynamodb", endpoint_url=env["DYNAMODB_ENDPOINT"], region_name="us-east-1",
        aws_access_key_id="local", aws_secret_access_key="local",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=5),
    )
    # The reader ACL user takes any password (redis-server cannot check an IAM token): no signing needed here.
    l2 = ValkeyL2("127.0.0.1", int(env["CACHE_PORT"]), auth="none", user=env["CACHE_USER"], password="unused",
                  ssl_ca_certs=env["CACHE_CA_FILE"], cluster=True, timeout_ms=2000)
    prompts = PromptClient(table_name=env["TABLE_NAME"], dynamodb_client=ddb, l2=l2)
    prompt_id, label = env["PROMPT_ID"], env["LABEL"]
    try:  # a preload that fails (a start storm on a busy machine) is not fatal: the polls read through
        prompts.preload([prompt_id], labels=[label])
    except Exception as err:  # noqa: BLE001
        sys.stderr.write(f"preload failed: {type(err).__name__}: {err}\n")
    while not stopping.is_set() and time.time() < deadline:
        versions = []
        arms = []
        for key in keys:
            try:
                prompt = prompts.get_prompt(prompt_id, label=label, stickiness_key=key)
                versions.append(str(prompt.version))
                arms.append(prompt.rollout.arm if prompt.rollout is not None else "-")
            except Exception as err:  # noqa: BLE001 - reported to the test as 'x'
                versions.append("x")
                arms.append("x")
                sys.stderr.write(f"read failed: {type(err).__name__}: {err}\n")
        stats = prompts.stats()
        counters = [stats["rollout_faults"], stats["store_errors"], stats["l2_errors"]]
        poll = {"t": int(time.time() * 1000), "v": "".join(versions), "a": "".join(arms), "e": counters}
        sys.stdout.write(json.dumps(poll) + "\n")
        sys.stdout.flush()
        stopping.wait(poll_s)
    sys.stdout.write(json.dumps({"stats": dict(prompts.stats())}) + "\n")
    sys.stdout.flush()
    prompts.close()
    l2.close()


if __name__ == "__main__":
    main()
