"""A Python reader process for the cross-language convergence test (test/runtime/convergence.test.ts): reads JSON
lines ``{"table": …, "ids": […]}`` on stdin and answers each with one JSON line mapping every id to
``{"version": n, "checksum": "…"}``, ``"notFound"`` or ``"error: …"``, read through a ``PromptClient`` per table
that shares the L2 (TLS, the reader ACL user) and the table with the Node readers. Environment:
``DYNAMODB_ENDPOINT``, ``CACHE_PORT``, ``CACHE_CA``, ``CACHE_USER``."""
import json
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from cdk_prompt_serving_runtime import PromptClient, PromptNotFoundError  # noqa: E402
from cdk_prompt_serving_runtime.valkey import ValkeyL2  # noqa: E402


def main() -> None:
    import boto3
    from botocore.config import Config

    ddb = boto3.session.Session().client(
        "dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT"], region_name="us-east-1",
        aws_access_key_id="local", aws_secret_access_key="local",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=5),
    )
    l2 = ValkeyL2("127.0.0.1", int(os.environ["CACHE_PORT"]), auth="none", user=os.environ["CACHE_USER"], password="unused",
                  ssl_ca_certs=os.environ["CACHE_CA"], timeout_ms=2000)
    clients = {}
    for line in sys.stdin:
        request = json.loads(line)
        table = request["table"]
        client = clients.get(table)
        if client is None:
            client = clients[table] = PromptClient(table_name=table, dynamodb_client=ddb, l2=l2, max_age_seconds=60,
                                                   epoch_poll_interval_ms=50, l2_timeout_ms=2000)
        answers = {}
        for prompt_id in request["ids"]:
            try:
                prompt = client.get_prompt(prompt_id)
                answers[prompt_id] = {"version": prompt.version, "checksum": prompt.checksum}
            except PromptNotFoundError:
                answers[prompt_id] = "notFound"
            except Exception as err:  # noqa: BLE001 - reported to the test
                answers[prompt_id] = f"error: {type(err).__name__}: {err}"
        sys.stdout.write(json.dumps(answers) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
