"""The index of fresh copies (the hot path of ``get_prompt``) on its own: which read each entry serves, for ids
holding several versions and labels, as entries come and go."""
import math
from typing import Any, List, Tuple

import pytest

from cdk_prompt_serving_runtime.fresh_index import FreshIndex
from cdk_prompt_serving_runtime.targets import Target, current, labeled, pinned


def index_with(*targets: Target) -> Tuple[FreshIndex, Any, List[Tuple[Any, ...]]]:
    """An index holding one distinct object per target, its getter, and the slow reads it made."""
    index = FreshIndex()
    for target in targets:
        index.put(target, target.key, (f"served {target.key}", math.inf))  # type: ignore[arg-type]
    slow: List[Tuple[Any, ...]] = []

    def read(*args: Any) -> Any:
        slow.append(args)
        return "slow"

    get, _ = index.getter(lambda: 1000.0, read)
    return index, get, slow


def test_each_version_and_label_of_an_id_is_served_from_memory_whichever_was_indexed_last() -> None:
    big = 300  # past CPython's shared small ints: the same version, another object
    _, get, slow = index_with(pinned("a", 1), pinned("a", 2), pinned("a", big), labeled("a", "prod"),
                              labeled("a", "beta"), current("a"))
    assert get("a", 1) == "served ('a', 1)" and get("a", 2) == "served ('a', 2)"
    assert get("a", int("300")) == "served ('a', 300)"
    assert get("a", label="prod") == "served ('label', 'prod', 'a')"
    assert get("a", label="".join(["be", "ta"])) == "served ('label', 'beta', 'a')"
    assert get("a") == "served a" and slow == []


@pytest.mark.parametrize("version", [True, 1.0, "1", 3])
def test_a_version_equal_to_a_held_one_but_not_an_exact_int_or_not_held_goes_to_the_slow_read(version: Any) -> None:
    _, get, slow = index_with(pinned("a", 1))
    assert get("a", version) == "slow" and slow == [("a", version, None, None, None)]


def test_an_entry_taken_out_is_no_longer_served_and_the_others_of_its_id_still_are() -> None:
    index, get, slow = index_with(pinned("a", 1), pinned("a", 2), labeled("a", "prod"), labeled("b", "prod"))
    assert index.take(("a", 2)) is not None  # the id's latest indexed version
    assert get("a", 2) == "slow" and get("a", 1) == "served ('a', 1)"
    assert index.take_locked(("a", 1)) is not None and index.pinned == {}
    assert get("a", 1) == "slow" and index.take(("a", 1)) is None
    assert index.take(("label", "prod", "a")) is not None
    assert get("a", label="prod") == "slow" and get("b", label="prod") == "served ('label', 'prod', 'b')"
    index.clear()
    assert get("b", label="prod") == "slow" and len(slow) == 4


def test_an_expired_entry_and_unhashable_arguments_go_to_the_slow_read() -> None:
    index = FreshIndex()
    index.put(current("a"), "a", ("old", 5.0))  # type: ignore[arg-type]
    index.put(pinned("a", 1), ("a", 1), ("old", 5.0))  # type: ignore[arg-type]
    get, hits = index.getter(lambda: 10.0, lambda *args: "slow")
    assert get("a") == "slow" and get("a", 1) == "slow" and hits() == 0
    assert get(["a"]) == "slow" and get(["a"], 1) == "slow" and get("a", label=["x"]) == "slow"  # type: ignore[arg-type]


def test_hits_count_the_reads_served_from_memory_and_nothing_else() -> None:
    index = FreshIndex()
    now = [0.0]
    index.put(current("a"), "a", ("a", 10.0))  # type: ignore[arg-type]
    index.put(pinned("a", 1), ("a", 1), ("a1", 10.0))  # type: ignore[arg-type]
    index.put(labeled("a", "prod"), ("label", "prod", "a"), ("prod", 10.0))  # type: ignore[arg-type]
    get, hits = index.getter(lambda: now[0], lambda *args: "slow")
    for _ in range(1000):
        get("a"), get("a", 1), get("a", label="prod"), get("b"), get("a", 2), get("a", True)
    assert hits() == 3000
    now[0] = 10.0  # all expired: nothing more counts
    assert [get("a"), get("a", 1), get("a", label="prod")] == ["slow"] * 3 and hits() == 3000
