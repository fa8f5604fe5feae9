"""The prompt object ``get_prompt`` returns (``src/runtime/prompt.ts``): built once per table read, immutable,
shared by every caller and thread.

Content is deep-frozen: lists become tuples and maps become :class:`FrozenDict` (a ``dict`` that refuses
changes, so ``json.dumps`` and botocore's parameter validation still accept it), so one caller cannot change what
the next one is served. ``render`` returns new, plain ``str`` / ``list`` / ``dict`` values.
"""
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from .errors import PromptStoreError
from .provenance import Provenance
from .render import TEMPLATE_VARIABLE as TEMPLATE_VARIABLE  # re-exported: fallback.py imports it from here
from .render import JSON_VARIABLES_ATTR, RenderPlan, fill_json, fill_text, json_strings, resolve_variables
from .schema.checksum import content_of
from .schema.keys import MAX_VERSION_NUMBER, STATUS_DELETED, TEMPLATE_CHAT, TEMPLATE_TEXT, Attr, parse_version_key


class FrozenDict(Dict[str, Any]):
    """A ``dict`` that cannot be changed after it is built."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("served prompts are immutable; render() returns copies you may change")

    __setitem__ = _refuse
    __delitem__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return id(self)


def freeze(value: Any) -> Any:
    if isinstance(value, dict):
        frozen = FrozenDict()
        for k, v in value.items():
            dict.__setitem__(frozen, k, freeze(v))
        return frozen
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class PromptRollout:
    """Which arm of a label's rollout a read served (``prompt.rollout``; the Node client's ``PromptRollout``)."""

    label: str
    """The label."""
    rollout_id: str
    """The rollout's id (``rollout_id``), as the audit trail records it."""
    arm: str
    """``A``: the label's own version; ``B``: the candidate."""
    percent_bp: int
    """The share served arm B, in basis points (0 to 10,000)."""
    candidate_version: int
    """The candidate's version number (arm B)."""


@dataclass(frozen=True)
class Prompt:
    """A served prompt. Immutable; safe to share between threads.

    ``template_type`` is ``"TEXT"`` (``text`` is set) or ``"CHAT"`` (``messages`` and ``system`` are set).

    Example::

        prompt = client.get_prompt("support-triage")
        if prompt.template_type == "TEXT":
            text = prompt.render({"ticket": body})
        else:
            bedrock.converse(modelId=prompt.model_id, **prompt.render({"ticket": body}))
    """

    id: str
    """The prompt id (``prompt_id``)."""
    version: int
    """The version number served (``version_number``)."""
    checksum: str
    """``sha256:`` + 64 hex digits of the canonical content: equal checksums mean equal content."""
    template_type: str
    """``TEXT`` or ``CHAT``."""
    text: Optional[str]
    """The template of a TEXT prompt; ``None`` for CHAT."""
    messages: Tuple[Any, ...]
    """Message templates of a CHAT prompt (Bedrock Converse shape); empty for TEXT."""
    system: Tuple[Any, ...]
    """System prompt blocks of a CHAT prompt (``[{"text": ...}]``); empty if none."""
    input_variables: Tuple[str, ...]
    """Declared variable names (``input_variables``), as the source lists them."""
    model_id: Optional[str]
    """The model the prompt was written for, if the source records one."""
    inference_config: Optional[Mapping[str, Any]]
    """Inference settings (temperature, maxTokens, …), if the source records them."""
    content: Mapping[str, Any] = field(repr=False)
    """The whole stored content, including fields this client does not interpret."""
    stale: bool = False
    """``True`` when this copy is past ``max_age_seconds``: served while a background read refreshes it, or
    because the table could not be read (stale-if-error)."""
    label: Optional[str] = None
    """The label this prompt was served for (``get_prompt(id, label=...)``); ``None`` for CURRENT and exact versions."""
    rollout: Optional[PromptRollout] = None
    """The rollout arm served, when the label has a rollout in progress (log it next to the model's output);
    ``version`` is that arm's version. ``None`` without a rollout (or when the rollout map is malformed)."""
    source_deleted: bool = False
    """``True`` when the source deleted this prompt while a label still points at one of its versions: the label
    keeps serving that version's content until it is moved. Always ``False`` for CURRENT and exact versions."""
    provenance: Provenance = field(default_factory=lambda: Provenance("table", False, time.time()), compare=False)
    """Where this copy came from (``l1``, ``l2``, ``table``, ``fallback``), whether stale, and how old."""
    _render_plan: Optional[RenderPlan] = field(default=None, repr=False, compare=False)

    def render(self, variables: Optional[Mapping[str, Any]] = None, *, allow_extra: bool = False,
               json_variables: Optional[Iterable[str]] = None) -> Any:
        """Fills every ``{{name}}``. TEXT: returns a ``str``. CHAT: returns ``{"messages": [...], "system": [...]}``
        (new plain lists and dicts, in the Bedrock Converse shape; blocks without variables and ``cachePoint`` blocks
        unchanged, keys in the stored order, so the prefix before the first variable is byte-identical across renders).

        Strict (``render.py`` has the rule): every placeholder needs a ``str``, finite number or ``bool`` (printed as
        JavaScript prints it: ``true``, ``1``), and a variable the prompt neither uses nor declares raises unless
        ``allow_extra=True``. A name in the prompt's ``json_variables`` or in ``json_variables=`` takes any JSON value,
        inserted as canonical JSON.

        :raises PromptRenderError: listing every missing, unexpected and invalid variable
        """
        variables = {} if variables is None else variables
        plan = self._plan()
        texts = resolve_variables(self.id, self.version, plan, variables, allow_extra, json_variables)
        if self.template_type == TEMPLATE_TEXT:
            return fill_text(self.text or "", texts)
        return {"messages": [fill_json(m, texts) for m in self.messages],
                "system": [fill_json(b, texts) for b in self.system]}

    def _plan(self) -> RenderPlan:
        plan = self._render_plan
        if plan is None:
            templates = [self.text or ""] if self.template_type == TEMPLATE_TEXT else json_strings((self.system, self.messages))
            plan = RenderPlan(templates, self.input_variables, self.content.get(JSON_VARIABLES_ATTR))
            object.__setattr__(self, "_render_plan", plan)  # a cache of immutable data: same answer from any thread
        return plan

    def stale_copy(self) -> "Prompt":
        """The same prompt flagged ``stale=True``, served from memory (shares the frozen content)."""
        return self.served_copy("fallback" if self.provenance.source == "fallback" else "l1", True)

    def served_copy(self, source: str, stale: bool) -> "Prompt":
        """The same prompt with another provenance (same ``read_at``; shares the frozen content and render plan)."""
        return dataclasses.replace(self, stale=stale, provenance=self.provenance.with_source(source, stale))


def is_deleted(item: Mapping[str, Any]) -> bool:
    """Whether a stored item is a tombstone (``status = DELETED``)."""
    return item.get(Attr.status) == STATUS_DELETED


def prompt_from_item(item: Mapping[str, Any], min_version: int = 1, provenance: Optional[Provenance] = None) -> Prompt:
    """Builds the frozen prompt of a pointer or version item (already decoded). ``min_version`` 0 admits the version
    number of a caller's fallback (``fallback.py``); every stored item has 1 or more.

    :raises PromptStoreError: if the item breaks the wire contract (the message names the item and what is wrong)
    """
    pid = str(item.get(Attr.prompt_id))

    def malformed(what: str) -> PromptStoreError:
        return PromptStoreError(f"item {pid}/{item.get(Attr.version)} breaks the wire contract: {what}")

    content = freeze(content_of(item))
    number = item.get(Attr.version_number)
    version: Optional[int]
    if number is not None:
        whole = isinstance(number, (int, float)) and not isinstance(number, bool) and float(number).is_integer()
        if not whole or not min_version <= number <= MAX_VERSION_NUMBER:
            raise malformed(f"{Attr.version_number} {_json_show(number)} is not a whole number from {min_version} to "
                            f"{MAX_VERSION_NUMBER}")
        version = int(number)
    else:
        version = parse_version_key(str(item.get(Attr.version)))
    checksum = item.get(Attr.checksum)
    if version is None:
        raise malformed(f"no {Attr.version_number}")
    if not isinstance(checksum, str):
        raise malformed(f"no {Attr.checksum}")
    template_type = content.get(Attr.template_type)
    variables = content.get(Attr.input_variables)
    base: Dict[str, Any] = dict(
        id=pid,
        version=version,
        checksum=checksum,
        # The declared names: strings only (a list of anything else declares nothing).
        input_variables=tuple(v for v in variables if isinstance(v, str)) if isinstance(variables, tuple) else (),
        model_id=content.get(Attr.model_id),
        inference_config=content.get(Attr.inference_config),
        content=content,
    )
    if provenance is not None:
        base["provenance"] = provenance
        base["stale"] = provenance.stale
    if template_type == TEMPLATE_TEXT:
        text = content.get(Attr.text)
        if not isinstance(text, str):
            raise malformed(f"TEXT prompt without {Attr.text}")
        return Prompt(template_type=TEMPLATE_TEXT, text=text, messages=(), system=(), **base)
    if template_type == TEMPLATE_CHAT:
        messages = content.get(Attr.messages)
        if not isinstance(messages, tuple):
            raise malformed(f"CHAT prompt without {Attr.messages}")
        system = content.get(Attr.system)
        return Prompt(template_type=TEMPLATE_CHAT, text=None, messages=messages,
                      system=system if isinstance(system, tuple) else (), **base)
    raise malformed(f"unknown {Attr.template_type} {_json_show(template_type)}")


def _json_show(value: Any) -> str:
    """``JSON.stringify`` of a simple value, for messages that match the Node client's."""
    if value is None:
        return "undefined"
    import json

    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)
