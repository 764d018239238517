"""The Pilot tests' settle (tests/pilot_settle.py) waits for a failed worker without failing itself."""

from __future__ import annotations

import time

import pytest

from pilot_settle import settled
from textual.app import App
from textual.worker import WorkerState

pytestmark = pytest.mark.anyio


class FailingWorker(App):
    def start(self):
        def fail() -> None:
            time.sleep(0.2)  # still running when the settle first looks
            raise ValueError("injected")

        return self.run_worker(fail, thread=True, exit_on_error=False)


async def test_settle_waits_for_a_worker_that_fails():
    app = FailingWorker()
    async with app.run_test():
        worker = app.start()
        await settled(app)
        assert worker.state == WorkerState.ERROR
        assert isinstance(worker.error, ValueError)
