"""The hook for a shared cache tier between the in-process cache and the table (``src/runtime/l2.ts``).

:class:`PromptCacheL2` is what :class:`~cdk_prompt_serving_runtime.PromptClient` needs from an L2; the Valkey/Redis
adapter (:class:`~cdk_prompt_serving_runtime.valkey.ValkeyL2`) implements it and is what ``PromptClient()`` builds
by itself when ``PROMPT_SERVING_CACHE_ENDPOINT`` is set. Any method may raise: the client counts the failure in
``stats()["l2_errors"]`` and reads the table instead. Implementations must bound their own calls (the client
passes ``l2_timeout_ms`` to the adapter it builds; a slow L2 is as bad as none).
"""
from typing import Optional

from .schema.l2 import l2_item_key

try:  # Python 3.8+: typing.Protocol
    from typing import Protocol
except ImportError:  # pragma: no cover
    Protocol = object  # type: ignore[assignment]


class PromptCacheL2(Protocol):
    """A Redis-protocol cache holding values of the L2 wire contract (see ``schema.l2``, v3). An object with a true
    ``write_through`` attribute (the built-in adapter on the construct's cache tier) also has its stream values
    used and its epoch watched; any other is used for fills only."""

    def get(self, key: str) -> Optional[str]:
        """The value under ``key`` or ``None``."""
        ...

    def set(self, key: str, value: str, ttl_seconds: int) -> None:
        """Stores a fill ``value`` under ``key`` for ``ttl_seconds`` (the reader's L1 bound)."""
        ...


def l2_key(table_name: str, prompt_id: str, sort_key: str) -> str:
    """The L2 key of one item's stream value: ``cdk-prompt-serving:v3/<table>/<prompt id>/<sort key>``, e.g.
    ``cdk-prompt-serving:v3/prompts/support-triage/CURRENT`` (the Node client's ``l2Key``; see the README's wire
    contract)."""
    return l2_item_key(table_name, prompt_id, sort_key)
