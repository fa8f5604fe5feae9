"""Reads single items from the serving table (``src/runtime/store.ts``): one eventually consistent ``GetItem`` per
read, bounded by a deadline, retried with jittered exponential backoff when DynamoDB throttles or the network
blips.

Thread safety: a ``TableReader`` is shared by every thread of a client; botocore clients are thread-safe.
"""
import logging
import random
import threading
import time
from typing import Any, Dict, Optional

from .ddb_codec import from_item
from .errors import PromptStoreError
from .schema.keys import PARTITION_KEY, SORT_KEY
from .stats import Counters

logger = logging.getLogger(__name__)

BACKOFF_BASE_MS = 50
"""First retry waits up to this long (full jitter: a uniform draw from 0 to the cap of the attempt)."""
BACKOFF_MAX_MS = 1000
"""No retry waits longer than this."""

THROTTLING_ERRORS = frozenset(["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"])


def _is_retryable(err: BaseException) -> bool:
    """Throttling, a 5xx, or a transient connection error (refused, reset, timed out)."""
    from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError, HTTPClientError
    from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

    if isinstance(err, ClientError):
        code = err.response.get("Error", {}).get("Code", "")
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0
        return code in THROTTLING_ERRORS or status >= 500
    return isinstance(
        err, (EndpointConnectionError, ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError, HTTPClientError)
    )


def _describe(err: BaseException) -> str:
    from botocore.exceptions import ClientError

    if isinstance(err, ClientError):
        e = err.response.get("Error", {})
        return f"{e.get('Code', 'Error')}: {e.get('Message', str(err))}"
    return f"{type(err).__name__}: {err}"


class TableReader:
    def __init__(self, client: Any, table_name: str, request_timeout: float, max_attempts: int, counters: Counters) -> None:
        self.client = client
        self.table_name = table_name
        self.request_timeout = request_timeout
        self.max_attempts = max_attempts
        self.counters = counters

    def deadline(self) -> float:
        """A deadline ``request_timeout`` from now (``time.monotonic`` seconds)."""
        return time.monotonic() + self.request_timeout

    def get_item(self, prompt_id: str, sort_key: str, deadline: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The raw item ``{prompt_id, sort_key}`` (DynamoDB JSON, as botocore returns it), or ``None``.

        :raises PromptStoreError: after the retries, or once the deadline has passed
        """
        deadline = self.deadline() if deadline is None else deadline
        attempt = 0
        while True:
            attempt += 1
            if time.monotonic() >= deadline:
                raise self._failure(prompt_id, sort_key, None, timed_out=True)
            try:
                self.counters.store_reads += 1
                answer: Dict[str, Dict[str, Any]] = self.client.get_item(
                    TableName=self.table_name,
                    Key={PARTITION_KEY: {"S": prompt_id}, SORT_KEY: {"S": sort_key}},
                )
                return answer.get("Item")
            except Exception as err:  # noqa: BLE001 - classified below, re-raised as PromptStoreError
                if attempt >= self.max_attempts or not _is_retryable(err):
                    raise self._failure(prompt_id, sort_key, err) from err
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._failure(prompt_id, sort_key, err, timed_out=True) from err
                self.counters.retries += 1
                cap = min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2**attempt) / 1000.0
                wait = random.random() * cap
                if wait >= remaining:
                    time.sleep(remaining)
                    raise self._failure(prompt_id, sort_key, err, timed_out=True) from err
                logger.debug("GetItem %s/%s retried after %s", prompt_id, sort_key, _describe(err))
                time.sleep(wait)

    def warm_up(self) -> None:
        """Runs one request through the botocore client's request path (service model, endpoint resolution,
        credentials, signing) with the send answered by a ``before-send`` handler of this thread, so nothing reaches
        DynamoDB: a reader the L2 serves makes its first table read exactly when the cache fails, and would pay that
        start-up then. Not a table operation (``DescribeEndpoints``, answered locally). Never raises."""
        try:
            from botocore.awsrequest import AWSResponse
        except ImportError:
            return
        me = threading.get_ident()

        class _Raw:
            def stream(self, **_: Any) -> Any:
                yield b'{"Endpoints":[]}'

        def answer(request: Any, **_: Any) -> Any:
            if threading.get_ident() != me:
                return None  # another thread's call: sent as usual
            return AWSResponse(request.url, 200, {"content-type": "application/x-amz-json-1.0"}, _Raw())

        events = getattr(getattr(self.client, "meta", None), "events", None)
        if events is None:
            return
        event = "before-send.dynamodb.DescribeEndpoints"
        unique_id = f"cdk-prompt-serving-warm-up-{id(self)}"
        try:
            events.register_first(event, answer, unique_id=unique_id)
            try:
                self.client.describe_endpoints()
            finally:
                events.unregister(event, unique_id=unique_id)
        except Exception as err:  # noqa: BLE001 - a warm-up never fails anything
            logger.debug("SDK warm-up failed: %s", err)

    def get_decoded(self, prompt_id: str, sort_key: str, deadline: Optional[float] = None) -> Optional[Dict[str, Any]]:
        raw = self.get_item(prompt_id, sort_key, deadline)
        if raw is None:
            return None
        try:
            return from_item(raw)
        except (TypeError, ValueError) as err:
            raise PromptStoreError(f"item {prompt_id}/{sort_key} breaks the wire contract: {err}") from err

    def _failure(self, prompt_id: str, sort_key: str, cause: Optional[BaseException], timed_out: bool = False) -> PromptStoreError:
        self.counters.store_errors += 1
        what = f"GetItem {prompt_id}/{sort_key} on table {self.table_name}"
        if timed_out:
            why = f"timed out after {round(self.request_timeout * 1000)} ms"
        else:
            why = f"failed: {_describe(cause) if cause is not None else 'Error'}"
        return PromptStoreError(f"{what} {why}")
