"""Environment variables the construct sets and both runtime clients read (``src/schema``'s ``Env``)."""


class Env:
    """Names of the fixed environment contract (set by ``PromptServingTable.addReader``)."""

    table_name = "PROMPT_SERVING_TABLE_NAME"
    cache_endpoint = "PROMPT_SERVING_CACHE_ENDPOINT"
    """``host:port``; its presence turns the L2 on."""
    cache_tls = "PROMPT_SERVING_CACHE_TLS"
    """``true`` | ``false``; default ``true``."""
    cache_auth = "PROMPT_SERVING_CACHE_AUTH"
    """``iam`` | ``none``; default ``iam``."""
    cache_user = "PROMPT_SERVING_CACHE_USER"
    """The user id IAM tokens are made for."""
    cache_name = "PROMPT_SERVING_CACHE_NAME"
    """The cache name: the host the IAM token is signed for."""
    cache_resource_type = "PROMPT_SERVING_CACHE_RESOURCE_TYPE"
    """``ServerlessCache`` | ``ReplicationGroup``; default ``ServerlessCache``."""
    cache_cluster = "PROMPT_SERVING_CACHE_CLUSTER"
    """``true`` | ``false``; default ``true`` (cluster-mode client)."""
