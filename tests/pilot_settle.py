"""A deterministic settle for Pilot tests: wait until the app has no work left, instead of Textual's
CPU-time heuristic.

Textual's Pilot waits after a key (twice inside `press`, once more in `pause`) with
`textual._wait.wait_for_idle`: it sleeps in 20 ms windows until one window passes with under 1 ms of
process CPU. That is at least 60 ms of sleep per key; the press-every-key passes (about 230 keys
each) spent 25 of their 27 s in it, with the worker at ~30% of a core.

`settled(app)` waits instead for the app to be quiescent, by its own state:
- the event loop has nothing else ready to run (no task or callback is runnable: every task waits
  on a queue, an event, a timer, a thread or I/O);
- every message pump (the app, its screens, every registered widget) has no message queued or being
  handled (`Queue._unfinished_tasks`: task_done is called after the handler returns) and no
  `call_next` callback pending;
- no worker is pending or running (a thread worker's messages come before it finishes);
- no animation is running or scheduled, no batch update is open (a mode switch holds one for 50 ms:
  Textual's `delay_update`, ended by a timer, which is waited for);
- the shown screen has no layout, scroll, repaint or recompose pending and no after-refresh
  callback: when it has, the update Textual's screen timer would make 1/60 s later is made now
  (`Screen._on_timer_update`, as `Pilot.pause` does).
The whole test must hold twice in a row, with a turn of the event loop between. An app that has an
exception, or is exiting, is not waited for (Textual holds a batch update open through its shutdown;
`run_test` waits for the exit and re-raises). The wait returns as soon as the app has handled all the
key led to, without a 20 ms window; it does not wait for timers that have not fired (a toast's
expiry, a cursor's blink; Textual's idle wait does not either). A state that never settles fails the
test after `timeout` seconds, naming what was busy, where Textual's wait gives up after 1 s as if
all were done.

Checked against Textual's wait, pass by pass (every scan's rendered screen text and table geometry
recorded under both waits, load 3-5): all-ones 80x24 and shipped 160x45, 192 of 192 scans the same;
shipped 80x24 and two-pairs 80x24, the same but for the command palette's list (shown or not yet
shown, which varies between runs under Textual's wait too) and one log-axis tick label on Run
lengths (1 or 2; two runs under Textual's wait gave one each). Pass times: 16 / 14 / 12 / 27 s
against 31 / 37 / 34 / 58 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from time import monotonic

from textual.worker import WorkerState

from specterm import compat_textual

READY = " ready callbacks in the event loop"
SCREEN_PENDING = ("_layout_required", "_scroll_required", "_repaint_required", "_recompose_required",
                  "_dirty_widgets", "_callbacks")


def _pumps(app) -> Iterator:
    yield app
    for stack in compat_textual.screen_stacks(app).values():
        yield from stack
    yield from list(app._registry)


def _pump_busy(app) -> str | None:
    """A message pump of `app` with messages or call_next callbacks still to handle, or None."""
    for pump in _pumps(app):
        queue = pump.__dict__.get("_message_queue")  # a cached_property: absent until first used
        if queue is not None and getattr(queue, "_unfinished_tasks", 0):
            return f"{type(pump).__name__} has {queue._unfinished_tasks} messages to handle"
        if pump._next_callbacks:
            return f"{type(pump).__name__} has call_next callbacks"
    return None


def busy(app) -> str | None:
    """What still has work to do in `app` (a short description), or None when it is quiescent.
    Screen work pending on the shown screen is reported as 'screen'."""
    loop = asyncio.get_running_loop()
    ready = getattr(loop, "_ready", None)
    if ready:
        return f"{len(ready)}{READY}"
    pumping = _pump_busy(app)
    if pumping is not None:
        return pumping
    if any(not w.is_finished for w in app.workers):
        return "workers"
    animator = app.animator
    if animator._animations or animator._scheduled:
        return "animations"
    if app._batch_count:
        return "a batch update"
    for screen in app.screen_stack:  # a modal's (help) background shows too
        for table in screen.query("DataTable"):  # widths are measured at the table's next Idle (update_cell(update_width=True))
            if table._updated_cells or table._require_update_dimensions:
                return "a table's column widths"
    try:
        screen = app.screen
    except Exception:  # no screen yet (start-up): nothing to lay out
        return None
    if screen.is_current and any(getattr(screen, name, None) for name in SCREEN_PENDING):
        return "screen"
    return None


async def _workers_done(app) -> None:
    """Wait until the running workers finish, whatever their outcome. Not WorkerManager.wait_for_complete:
    its Worker.wait re-raises a worker's error (WorkerFailed) in the waiter, so a test of how the app
    shows a failed worker failed by chance, when its settle caught the worker still running."""
    running = [w for w in app.workers if w.state == WorkerState.RUNNING]
    if running:
        await asyncio.gather(*(w.wait() for w in running), return_exceptions=True)
    else:  # pending: not started yet (Worker.wait refuses those)
        await asyncio.sleep(0.001)


async def settled(app, timeout: float = 60.0) -> None:
    """Return once `app` is quiescent (see the module docstring) or has an exception; raise
    AssertionError if it is still busy after `timeout` seconds."""
    deadline = monotonic() + timeout
    calm = 0
    reason: str | None = "start"
    while calm < 2:
        if reason is None or reason.endswith(READY):
            await asyncio.sleep(0)  # one turn of the event loop
        elif reason == "workers":
            await _workers_done(app)
        elif reason == "animations":
            await app.animator.wait_until_complete()
        elif reason == "screen":
            app.screen._on_timer_update()
            await asyncio.sleep(0)
        else:  # waiting on a thread or a timer (Textual's 50 ms delay_update on a mode switch): no busy loop
            await asyncio.sleep(0.001)
        if app._exception is not None or getattr(app, "_exit", False):  # failed, or quitting (run_test waits for the exit)
            return
        reason = busy(app)
        if reason is None:
            calm += 1
            continue
        calm = 0
        if monotonic() > deadline:
            raise AssertionError(f"the app did not settle within {timeout} s: {reason}")


def textual_wait() -> bool:
    """SPECTERM_PILOT_WAIT=idle: keep Textual's own CPU-time idle wait."""
    return os.environ.get("SPECTERM_PILOT_WAIT", "") == "idle"


@contextlib.contextmanager
def settling(app) -> Iterator[None]:
    """Within the block, Pilot's and App._press_keys' idle waits are `settled(app)`."""
    if textual_wait():
        yield
        return
    import textual.app
    import textual.pilot

    async def wait_for_idle(min_sleep: float = 0.0, max_sleep: float = 1.0) -> None:
        await settled(app)

    saved = textual.app.wait_for_idle, textual.pilot.wait_for_idle
    textual.app.wait_for_idle = textual.pilot.wait_for_idle = wait_for_idle  # type: ignore[assignment]
    try:
        yield
    finally:
        textual.app.wait_for_idle, textual.pilot.wait_for_idle = saved


async def until(pilot, cond, what: str, tries: int = 400) -> None:
    """Pause the Pilot 20 ms at a time until cond() holds; fail naming `what` after `tries` pauses."""
    for _ in range(tries):
        if cond():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")
