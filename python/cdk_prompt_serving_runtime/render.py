"""Strict rendering (``src/runtime/render.ts``): which variables a prompt takes, which values it accepts, and the
one-pass fill. The rule is the Node client's, vector for vector (``test/conformance/fixtures/render.json``):

- **Required**: every ``{{placeholder}}`` of the template (TEXT: ``text``; CHAT: every string of ``system``, then
  ``messages``). A value that is absent or ``None`` is missing.
- **Accepted**: the placeholders plus the declared ``input_variables``. A declared name the template never uses is
  accepted, never required; a placeholder that is not declared is still required.
- **Extra**: any other name with a value raises unless ``allow_extra=True`` (then it is ignored). A name whose value
  is ``None`` is absent, never extra.
- **Values**: ``str``, a finite ``int``/``float`` or ``bool`` (printed as JavaScript's ``String(value)``: ``1.0`` →
  ``1``, ``True`` → ``true``). A name in the prompt's ``json_variables`` or the call's ``json_variables=`` takes any
  JSON value (``dict`` with ``str`` keys, ``list``/``tuple``, scalars), inserted as canonical JSON (keys sorted by
  UTF-16 code unit, no whitespace, JavaScript numbers). Anything else (``NaN``, ``inf``, sets, objects) is invalid.
- Every problem is found before anything is filled and raised as one :class:`PromptRenderError`.
"""
import math
import re
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from .errors import PromptRenderError
from .schema.checksum import canonical_json, js_number

# JavaScript's \s (ECMAScript WhiteSpace + LineTerminator), so both clients accept exactly the same placeholders.
_JS_SPACE = "[\t\n\u000b\u000c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
TEMPLATE_VARIABLE = re.compile(r"\{\{" + _JS_SPACE + r"*([A-Za-z_][A-Za-z0-9_.-]*)" + _JS_SPACE + r"*\}\}")
"""``{{ name }}``: letters, digits, ``_``, ``-`` and ``.``; spaces inside the braces allowed (``TEMPLATE_VARIABLE``)."""

JSON_VARIABLES_ATTR = "json_variables"
"""Content field listing the variables that take JSON values (front matter ``json_variables:``)."""

_MAX_JSON_DEPTH = 64


def template_variables(template: str) -> List[str]:
    """Names of the placeholders of a template, in order of first use."""
    return list(dict.fromkeys(m.group(1) for m in TEMPLATE_VARIABLE.finditer(template)))


def json_strings(value: Any) -> Iterator[str]:
    """The strings of a JSON value in fill order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from json_strings(v)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from json_strings(v)


class RenderPlan:
    """What a template takes, worked out once per prompt (immutable)."""

    __slots__ = ("placeholders", "accepted", "json")

    def __init__(self, templates: Iterable[str], declared: Sequence[str], json_names: Any) -> None:
        seen: Dict[str, None] = {}
        for t in templates:
            for m in TEMPLATE_VARIABLE.finditer(t):
                seen[m.group(1)] = None
        self.placeholders: Tuple[str, ...] = tuple(seen)
        self.accepted: FrozenSet[str] = frozenset(seen) | frozenset(declared)
        names = json_names if isinstance(json_names, (list, tuple)) else ()
        self.json: FrozenSet[str] = frozenset(n for n in names if isinstance(n, str))


def _utf16(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def resolve_variables(prompt_id: str, version: int, plan: RenderPlan, variables: Mapping[str, Any],
                      allow_extra: bool, json_variables: Optional[Iterable[str]]) -> Dict[str, str]:
    """Checks ``variables`` against the plan; returns the text of each placeholder's value.

    :raises PromptRenderError: listing every missing, extra and invalid variable
    """
    texts: Dict[str, str] = {}
    missing: List[str] = []
    invalid: List[str] = []
    call_json = frozenset(json_variables) if json_variables is not None else frozenset()
    for name in plan.placeholders:
        value = variables.get(name) if name in variables else None
        if value is None:
            missing.append(name)
            continue
        text = value_text(value, name in plan.json or name in call_json)
        if text is None:
            invalid.append(name)
        else:
            texts[name] = text
    extra: List[str] = []
    if not allow_extra:
        extra = sorted((str(k) for k, v in variables.items() if v is not None and k not in plan.accepted), key=_utf16)
    if missing or extra or invalid:
        raise PromptRenderError(prompt_id, missing, version=version, extra=extra, invalid=invalid)
    return texts


def value_text(value: Any, json: bool) -> Optional[str]:
    """The text a value is inserted as; ``None`` for a value of a type the variable does not take."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number(value) if _finite(value) else None
    if not json or not _is_json(value, 0):
        return None
    return canonical_json(value)


def _finite(value: Any) -> bool:
    """A number JavaScript holds finite: an int beyond the float range is not (JSON.parse reads it as Infinity)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _is_json(value: Any, depth: int) -> bool:
    if depth > _MAX_JSON_DEPTH:
        return False
    if value is None or isinstance(value, (str, bool)):
        return True
    if isinstance(value, (int, float)):
        return _finite(value)
    if isinstance(value, (list, tuple)):
        return all(_is_json(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_json(v, depth + 1) for k, v in value.items())
    return False


def fill_text(template: str, texts: Mapping[str, str]) -> str:
    """Replaces each ``{{name}}`` in one pass (values are never scanned again)."""
    return TEMPLATE_VARIABLE.sub(lambda m: texts.get(m.group(1), m.group(0)), template)


def fill_json(value: Any, texts: Mapping[str, str]) -> Any:
    """``fill_text`` applied to every string of a (frozen) JSON value; returns new plain lists and dicts, keys in the
    stored order, so a block without variables (a ``cachePoint``) serialises byte-identically from render to render."""
    if isinstance(value, str):
        return fill_text(value, texts)
    if isinstance(value, (list, tuple)):
        return [fill_json(v, texts) for v in value]
    if isinstance(value, Mapping):
        return {k: fill_json(v, texts) for k, v in value.items()}
    return value
