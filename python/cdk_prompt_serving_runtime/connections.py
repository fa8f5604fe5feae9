"""What a ``PromptClient`` connects to (``src/runtime/connections.ts``): the default DynamoDB client, and the L2 built
from the environment (with its one start-up read, so an unreachable cache is said once rather than counted per read).
"""
import logging
import os
from typing import Any, Mapping, Optional, Tuple

from .l2 import PromptCacheL2
from .options import ResolvedOptions
from .schema.env import Env
from .schema.l2 import l2_epoch_key
from .stats import Counters, report_l2_unavailable

logger = logging.getLogger(__name__)

NO_EPOCH = object()
"""No epoch was read at start-up (an absent epoch key reads as ``None``, a value like any other)."""


def default_dynamodb_client(request_timeout: float) -> Any:
    """A DynamoDB client from the standard environment, with retries left to ``PromptClient`` and socket timeouts
    inside the request deadline. ``AWS_ENDPOINT_URL_DYNAMODB`` / ``AWS_ENDPOINT_URL`` are honoured on botocore
    versions that predate them."""
    import boto3
    from botocore.config import Config

    timeout = max(0.1, request_timeout)
    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=timeout,
        read_timeout=timeout,
        max_pool_connections=50,
    )
    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL") or None
    return boto3.session.Session().client("dynamodb", config=config, endpoint_url=endpoint)


def build_l2(l2: Any, env: Mapping[str, str], options: ResolvedOptions, counters: Counters
             ) -> Tuple[Optional[PromptCacheL2], bool, Any]:
    """The L2 to use (``False``: none; an adapter given: it; else one from ``PROMPT_SERVING_CACHE_*``, only for the
    environment's table: none when ``PROMPT_SERVING_TABLE_NAME`` names another table than the client's), whether the
    client owns it (closes it), and the epoch as read at start-up (:data:`NO_EPOCH` when not read)."""
    if l2 is False:
        return None, False, NO_EPOCH
    if l2 is not None:
        return l2, False, NO_EPOCH
    if not env.get(Env.cache_endpoint):
        return None, False, NO_EPOCH
    table = options.table_name
    env_table = env.get(Env.table_name)
    if env_table and env_table != table:
        # The construct sets the cache variables beside the table's name: that cache serves that table (its ACL
        # allows that table's keys only, its epoch is moved by that table's stream). A client given another table
        # reads it without an L2 unless it is given one.
        logger.info("L2 cache not used: %s names the cache of table %s, this client reads %s (pass l2= to use one)",
                    Env.cache_endpoint, env_table, table)
        return None, False, NO_EPOCH
    try:
        from .valkey import ValkeyL2

        adapter = ValkeyL2.from_environment(env, timeout_ms=options.l2_timeout * 1000)
    except ImportError as err:  # redis-py not shipped with the function
        report_l2_unavailable(counters, f"{Env.cache_endpoint} is set but redis-py (`redis`) cannot be imported: "
                              "give the function the construct's reader layer (`addReader` attaches it to Python "
                              "functions: make sure the function was not created with its own `layers` that replace "
                              f"it) or ship redis-py with the function; reads go to the table ({err})", table)
        return None, False, NO_EPOCH
    except Exception as err:  # noqa: BLE001 - an L2 failure never fails a read, nor the client's creation
        counters.l2_errors += 1
        logger.warning("L2 cache disabled: %s", err)
        return None, False, NO_EPOCH
    startup_epoch: Any = NO_EPOCH
    try:  # one read at start-up, so an unreachable cache is said once now rather than counted per read
        startup_epoch = adapter.get(l2_epoch_key(table))  # the epoch watch's first read (seeded below)
    except Exception as err:  # noqa: BLE001
        report_l2_unavailable(counters, f"{Env.cache_endpoint} is set but the cache at "
                              f"{env.get(Env.cache_endpoint)} could not be reached: check the function's VPC subnets "
                              "and security group (`addReader` opens the cache's ports to it), its "
                              "`elasticache:Connect` permission and the cache's state; reads go to the table, and "
                              f"the connection is retried ({err})", table)
    return adapter, True, startup_epoch
