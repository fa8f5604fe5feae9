"""``cdk_prompt_serving_runtime``: the Python client Lambda functions use to read prompts from a
``PromptServingTable`` (the ``cdk-prompt-serving`` construct library), with the Node client's behaviour.

Depends only on boto3/botocore (present in the Lambda Python runtime); the optional Valkey/Redis L2 needs
redis-py (the ``valkey`` extra).

Example::

    from cdk_prompt_serving_runtime import PromptClient, PromptNotFoundError

    prompts = PromptClient()  # module level; PROMPT_SERVING_TABLE_NAME is set by the construct

    def handler(event, context):
        try:
            prompt = prompts.get_prompt("support-answer")
        except PromptNotFoundError:
            return {"statusCode": 404}
        return {"statusCode": 200, "body": prompt.render({"question": event["question"]})}
"""
from .client import PromptClient
from .errors import PromptNotFoundError, PromptRenderError, PromptServingError, PromptStoreError
from .fallback import PromptFallback
from .l2 import PromptCacheL2, l2_key
from .options import DEFAULTS, ENV_VARS, MAX_TIMER_MS
from .prompt import Prompt, PromptRollout
from .provenance import OnRead, Provenance, ReadInfo, ReadSource, combine_read_hooks, log_reads, otel_read_attributes
from .read_metrics import EmfReadMetrics, emf_read_metrics
from .stats import PromptClientStats

__version__ = "0.1.0"

__all__ = [
    "DEFAULTS",
    "ENV_VARS",
    "MAX_TIMER_MS",
    "Prompt",
    "PromptCacheL2",
    "PromptRollout",
    "PromptClient",
    "PromptClientStats",
    "PromptFallback",
    "PromptNotFoundError",
    "PromptRenderError",
    "PromptServingError",
    "PromptStoreError",
    "l2_key",
    "EmfReadMetrics",
    "OnRead",
    "Provenance",
    "ReadInfo",
    "ReadSource",
    "combine_read_hooks",
    "emf_read_metrics",
    "log_reads",
    "otel_read_attributes",
]
