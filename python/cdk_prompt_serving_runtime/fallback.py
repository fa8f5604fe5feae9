"""A caller-supplied prompt :meth:`PromptClient.get_prompt` returns only when nothing can be read
(``src/runtime/fallback.ts``): the table fails (down, throttled past the retries, timed out), the L2 has no copy and
memory holds none within ``stale_if_error_seconds``. Never used for a prompt that does not exist.
"""
import json
import time
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence

from .prompt import TEMPLATE_VARIABLE, Prompt, prompt_from_item
from .provenance import Provenance
from .schema.checksum import checksum
from .schema.keys import CURRENT, TEMPLATE_CHAT, TEMPLATE_TEXT, Attr


@dataclass(frozen=True)
class PromptFallback:
    """A TEXT or CHAT prompt given in code (the Node client's ``PromptFallback``, in snake_case).

    Example::

        prompt = prompts.get_prompt("support-triage", fallback=PromptFallback(text="Answer briefly: {{ticket}}"))
    """

    text: Optional[str] = None
    """A TEXT template (``{{name}}`` placeholders). Give either ``text`` or ``messages``."""
    messages: Optional[Sequence[Any]] = None
    """CHAT message templates in the Bedrock Converse shape."""
    system: Optional[Sequence[Any]] = None
    """CHAT system blocks."""
    model_id: Optional[str] = None
    inference_config: Optional[Mapping[str, Any]] = None


def _variables(template: str) -> Dict[str, None]:
    return dict.fromkeys(m.group(1) for m in TEMPLATE_VARIABLE.finditer(template))


def fallback_prompt(prompt_id: str, fallback: PromptFallback) -> Prompt:
    """The fallback as a served prompt: version 0, flagged ``stale``, the checksum of its content."""
    is_text = isinstance(fallback.text, str)
    content: Dict[str, Any] = {Attr.template_type: TEMPLATE_TEXT if is_text else TEMPLATE_CHAT}
    if is_text:
        content[Attr.text] = fallback.text
        templates = str(fallback.text)
    else:
        messages, system = list(fallback.messages or []), list(fallback.system or [])
        content[Attr.messages] = messages
        content[Attr.system] = system
        # the placeholders in order of first use, scanned as the Node client scans JSON.stringify([system, messages])
        templates = json.dumps([system, messages], ensure_ascii=False, separators=(",", ":"))
    content[Attr.input_variables] = list(_variables(templates))
    if fallback.model_id is not None:
        content[Attr.model_id] = fallback.model_id
    if fallback.inference_config is not None:
        content[Attr.inference_config] = dict(fallback.inference_config)
    item = dict(content)
    item.update({Attr.prompt_id: prompt_id, Attr.version: CURRENT, Attr.version_number: 0, Attr.checksum: checksum(content)})
    return prompt_from_item(item, 0, Provenance("fallback", True, time.time()))
