"""ElastiCache IAM authentication tokens, signed with botocore (AWS's documented scheme).

A token is a SigV4-presigned ``GET`` of ``http://<cache name>/?Action=connect&User=<user id>`` (plus
``&ResourceType=ServerlessCache`` for a serverless cache), service ``elasticache``, valid 900 s, sent without
the ``http://`` as the password. A token only opens connections: an authenticated connection lives up to 12 h,
so :class:`~cdk_prompt_serving_runtime.valkey.ValkeyL2` reconnects before that.
"""
import datetime
from typing import Any, Optional

TOKEN_EXPIRY_SECONDS = 900
RESOURCE_SERVERLESS = "ServerlessCache"
RESOURCE_REPLICATION_GROUP = "ReplicationGroup"


def iam_auth_token(
    cache_name: str,
    user_id: str,
    region: str,
    credentials: Any,
    resource_type: str = RESOURCE_SERVERLESS,
    now: Optional[datetime.datetime] = None,
) -> str:
    """An IAM auth token for ``user_id`` on ``cache_name``. ``credentials`` are botocore credentials
    (``session.get_credentials()``; frozen or refreshable). ``now`` fixes the signing time (tests, golden cases).
    """
    from botocore.awsrequest import AWSRequest

    if resource_type not in (RESOURCE_SERVERLESS, RESOURCE_REPLICATION_GROUP):
        raise ValueError(
            f"resource type must be {RESOURCE_SERVERLESS} or {RESOURCE_REPLICATION_GROUP}, got {resource_type!r}"
        )
    params = {"Action": "connect", "User": user_id}
    if resource_type == RESOURCE_SERVERLESS:
        params["ResourceType"] = RESOURCE_SERVERLESS
    request = AWSRequest(method="GET", url=f"http://{cache_name}/", params=params)
    frozen = credentials.get_frozen_credentials() if hasattr(credentials, "get_frozen_credentials") else credentials
    when = now if now is not None else datetime.datetime.now(datetime.timezone.utc)
    _signer(frozen, region, when).add_auth(request)
    url: str = request.prepare().url
    return url[len("http://"):]


def _signer(credentials: Any, region: str, when: datetime.datetime) -> Any:
    """botocore's SigV4 query signer at a given time (its own ``add_auth`` steps, with the time passed in)."""
    from botocore.auth import SIGV4_TIMESTAMP, SigV4QueryAuth

    class _AtTime(SigV4QueryAuth):  # type: ignore[misc]
        def add_auth(self, request: Any) -> None:
            stamp = when.astimezone(datetime.timezone.utc).strftime(SIGV4_TIMESTAMP)
            request.context["timestamp"] = stamp
            self._modify_request_before_signing(request)
            canonical_request = self.canonical_request(request)
            string_to_sign = self.string_to_sign(request, canonical_request)
            self._inject_signature_to_request(request, self.signature(string_to_sign, request))

    return _AtTime(credentials, "elasticache", region, expires=TOKEN_EXPIRY_SECONDS)
