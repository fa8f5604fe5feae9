"""DynamoDB attribute values ⇄ plain Python values (``src/schema/ddb-codec.ts``).

``N`` becomes an ``int`` when it is an integer literal and a ``float`` otherwise (JavaScript's ``Number``); ``B``
becomes ``bytes`` (botocore hands bytes; DynamoDB JSON, as in an L2 value or a stream record, carries base64).
"""
import base64
import re
from typing import Any, Dict, Mapping

_INT = re.compile(r"^-?\d+$")


def from_number(text: str) -> Any:
    if _INT.match(text):
        return int(text)
    return float(text)


def from_attr(attr: Mapping[str, Any]) -> Any:
    if "S" in attr:
        return attr["S"]
    if "N" in attr:
        return from_number(attr["N"])
    if "BOOL" in attr:
        return bool(attr["BOOL"])
    if "NULL" in attr:
        return None
    if "L" in attr:
        return [from_attr(v) for v in attr["L"]]
    if "M" in attr:
        return from_item(attr["M"])
    if "B" in attr:
        b = attr["B"]
        return base64.b64decode(b, validate=True) if isinstance(b, str) else bytes(b)
    if "SS" in attr:
        return list(attr["SS"])
    if "NS" in attr:
        return [from_number(n) for n in attr["NS"]]
    if "BS" in attr:
        return [base64.b64decode(b, validate=True) if isinstance(b, str) else bytes(b) for b in attr["BS"]]
    raise TypeError(f"unsupported attribute value {sorted(attr.keys())!r}")


def from_item(item: Mapping[str, Any]) -> Dict[str, Any]:
    if not isinstance(item, Mapping):
        raise TypeError("an item is a map of attribute values")
    return {k: from_attr(v) for k, v in item.items()}


def to_json_attr(attr: Mapping[str, Any]) -> Dict[str, Any]:
    """One wire attribute value with binary as base64 text: DynamoDB JSON as a stream record carries it."""
    out: Dict[str, Any] = {}
    for t, v in attr.items():
        if t == "B":
            out[t] = base64.b64encode(bytes(v)).decode("ascii") if not isinstance(v, str) else v
        elif t == "BS":
            out[t] = [base64.b64encode(bytes(b)).decode("ascii") if not isinstance(b, str) else b for b in v]
        elif t == "L":
            out[t] = [to_json_attr(e) for e in v]
        elif t == "M":
            out[t] = {k: to_json_attr(e) for k, e in v.items()}
        else:
            out[t] = v
    return out


def to_json_item(item: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: to_json_attr(v) for k, v in item.items()}
