"""The Valkey adapter's settings (:class:`~cdk_prompt_serving_runtime.valkey.ValkeyL2`; the Node client's
``src/runtime/l2-env.ts``): the ``PROMPT_SERVING_CACHE_*`` variables the construct's ``addReader`` sets, and the
password each connection signs (an IAM token, a static password, or none). Bad input fails with a ``ValueError``
naming the variable to fix."""
import os
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .iam_token import RESOURCE_REPLICATION_GROUP, RESOURCE_SERVERLESS, iam_auth_token
from .schema.env import Env

CONNECT_TIMEOUT_VARIABLE = "PROMPT_SERVING_L2_CONNECT_TIMEOUT_MS"


def parse_bool(name: str, raw: Optional[str], default: bool) -> bool:
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"{name} must be true or false, got {raw!r}")


def parse_endpoint(endpoint: str) -> Tuple[str, int]:
    host, sep, port = endpoint.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{Env.cache_endpoint} must be host:port, got {endpoint!r}")
    return host.strip("[]"), int(port)


def options_from_environment(env: Mapping[str, str], timeout_ms: float) -> Tuple[str, int, Dict[str, Any]]:
    """The host, port and keyword arguments of the adapter the ``PROMPT_SERVING_CACHE_*`` variables describe.

    :raises ValueError: naming the variable when one is missing or malformed
    """
    endpoint = env.get(Env.cache_endpoint)
    if not endpoint:
        raise ValueError(f"{Env.cache_endpoint} is not set")
    host, port = parse_endpoint(endpoint)
    options: Dict[str, Any] = {
        "tls": parse_bool(Env.cache_tls, env.get(Env.cache_tls), True),
        "auth": (env.get(Env.cache_auth) or "iam").strip(),
        "user": env.get(Env.cache_user) or None,
        "cache_name": env.get(Env.cache_name) or None,
        "resource_type": (env.get(Env.cache_resource_type) or RESOURCE_SERVERLESS).strip(),
        "cluster": parse_bool(Env.cache_cluster, env.get(Env.cache_cluster), True),
        "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
        "timeout_ms": timeout_ms,
    }
    connect_timeout = env.get(CONNECT_TIMEOUT_VARIABLE)
    if connect_timeout is not None and connect_timeout.strip() != "":
        try:
            options["connect_timeout_ms"] = float(connect_timeout)
        except ValueError:
            raise ValueError(f"{CONNECT_TIMEOUT_VARIABLE} must be a number, got {connect_timeout!r}") from None
        if not options["connect_timeout_ms"] >= 0:
            raise ValueError(f"{CONNECT_TIMEOUT_VARIABLE} must be 0 or more, got {connect_timeout!r}")
    return host, port, options


def password_source(*, auth: str, user: Optional[str], cache_name: Optional[str], region: Optional[str],
                    resource_type: str, password: Optional[str], credentials: Any,
                    token_provider: Optional[Callable[[], str]]) -> Optional[Callable[[], str]]:
    """What each new connection calls for its password: ``token_provider`` if given, else a fresh IAM token
    (``auth="iam"``), else the static ``password``, else ``None`` (no login).

    :raises ValueError: for an unknown ``auth`` or resource type, or IAM auth without its user, cache name, Region or
        credentials
    """
    if auth not in ("iam", "none"):
        raise ValueError(f"{Env.cache_auth} must be iam or none, got {auth!r}")
    if resource_type not in (RESOURCE_SERVERLESS, RESOURCE_REPLICATION_GROUP):
        raise ValueError(
            f"{Env.cache_resource_type} must be {RESOURCE_SERVERLESS} or {RESOURCE_REPLICATION_GROUP}, got {resource_type!r}"
        )
    if token_provider is None and auth == "iam":
        if not user or not cache_name:
            raise ValueError(
                f"IAM auth needs {Env.cache_user} and {Env.cache_name} (the construct's addReader sets both)"
            )
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise ValueError("IAM auth needs a Region: set AWS_REGION (the Lambda runtime does)")
        if credentials is None:
            import botocore.session

            credentials = botocore.session.Session().get_credentials()
            if credentials is None:
                raise ValueError("IAM auth needs AWS credentials; none found in the standard places")
        creds, name, uid, reg, rtype = credentials, cache_name, user, region, resource_type
        return lambda: iam_auth_token(name, uid, reg, creds, rtype)
    if token_provider is None and password is not None:
        static = password
        return lambda: static
    return token_provider
