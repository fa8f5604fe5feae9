"""The ``on_read`` hook, called so that nothing it does can hurt a read: whatever it raises (an exception whose
``str()`` raises included) or returns (a coroutine object from an ``async def`` hook, closed so it never warns) leaves
the read served, and a failure is reported once per client, as a WARNING naming what went wrong."""
import inspect
import logging
from typing import Any, Optional

from .prompt import Prompt
from .provenance import OnRead, read_info

logger = logging.getLogger(__name__)


def describe_error(err: BaseException) -> str:
    """``Type: text`` of any exception, even one whose ``str()`` raises (then ``<str() raised>``), at most 500 chars."""
    try:
        name = type(err).__qualname__
    except Exception:  # noqa: BLE001
        name = "exception"
    try:
        text = str(err)
    except Exception:  # noqa: BLE001
        text = "<str() raised>"
    return f"{name}: {text}"[:500]


class ReadReporter:
    """Calls ``on_read(info, client)`` after each served read."""

    __slots__ = ("_hook", "_table_name", "_reported")

    def __init__(self, hook: OnRead, table_name: str) -> None:
        self._hook = hook
        self._table_name = table_name
        self._reported = False

    def __call__(self, prompt: Prompt, requested_version: Optional[int], client: Any) -> None:
        try:
            result = self._hook(read_info(self._table_name, prompt, requested_version), client)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:  # noqa: BLE001 - the caller's hook must not fail the read
            self._report(f"raised {describe_error(err)}")
            return
        if result is None:
            return
        try:
            if inspect.iscoroutine(result):
                result.close()  # never started: closing it keeps "coroutine was never awaited" from the log
                self._report("returned a coroutine (an async def hook?); hooks are called synchronously and it was "
                             "not run: use a plain function")
            elif inspect.isawaitable(result):
                self._report("returned an awaitable; hooks are called synchronously and it was not awaited")
        except Exception as err:  # noqa: BLE001 - a returned value that cannot even be inspected
            self._report(f"returned a value that could not be inspected ({describe_error(err)})")

    def _report(self, what: str) -> None:
        if self._reported:
            return
        self._reported = True
        logger.warning("the on_read hook %s (reads are served regardless; logged once)", what)
