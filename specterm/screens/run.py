"""Run: the live oracle. A thread worker runs it and posts progress; Escape cancels and keeps every
finished prompt; Enter opens the results when it ends."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.screen import Screen
from textual.widgets import Header, Label, Log, ProgressBar, Static
from textual.worker import get_current_worker

from specterm import messages
from specterm.core.errors import SpectermError
from specterm.engines.progress import Cancelled, Progress
from specterm.widgets.footer import KeyFooter
from specterm.widgets.progress import BitsView, bits_legend, stats_line
from specterm.widgets.sparkline import ScaledSparkline
from specterm.widgets.tables import safe

if TYPE_CHECKING:
    from specterm.app_view import AppView

OracleFn = Callable[..., Path]


def now() -> float:
    """The Run screen's clock (time.monotonic; a test replaces this name, never the time module)."""
    return time.monotonic()
CHECKING = "the models, tokenizers and prompts (loading transformers) ..."


def checking_text(config: Any) -> str:
    """What the Run screen says while the run's arguments are checked, by the engine that will run it."""
    return CHECKING.replace("transformers", "llama.cpp") if getattr(config, "backend", "torch") == "llama.cpp" else CHECKING


def model_name(spec: Any) -> str:
    return str(spec) if spec is not None else "?"


class RunScreen(Screen[Any]):
    """Drives `run_oracle(config, on_progress, cancel)`; `oracle` replaces it (tests, demos)."""

    SCREEN_TITLE = "Run"

    BINDINGS = [
        Binding("escape", "cancel", "cancel run", id="run.cancel", tooltip="Stop after the current step; finished prompts stay on disk"),
        Binding("enter", "open_results", "open results", id="run.open", tooltip="Open the finished run on the Overview"),
    ]

    def __init__(self, config: Any, oracle: OracleFn | None = None, check: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        self.config = config
        self.oracle = oracle
        self.check = check
        self.cancel_event = threading.Event()
        self.state = "starting"  # starting | running | cancelling | done | cancelled | failed
        self.result_path: Path | None = None
        self.alpha_history: list[float] = []
        self.last: Progress | None = None
        self.last_at = 0.0
        """When `last` came (time.monotonic): the clock ticks on from it between reports."""

    @property
    def sapp(self) -> "AppView":
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(icon="")
        with Vertical(id="run-body"):
            yield Static("", id="head", classes="head")
            yield Static(self._head_text(), id="run-head")
            yield Static(f"[b]checking[/]  {checking_text(self.config)}" if self.check is not None else "starting ...", id="run-phase")
            with Grid(id="run-bars"):
                yield Label("prompts", id="overall-label", classes="bar-label")
                yield ProgressBar(id="overall", show_eta=False, show_percentage=False)
                yield Label("", id="overall-count", classes="bar-count")
                yield Label("tokens", classes="bar-label")
                yield ProgressBar(id="prompt", show_eta=False, show_percentage=False)
                yield Label("", id="prompt-count", classes="bar-count")
            yield Static("", id="run-stats")
            yield Static("running alpha over saved prompts (scale 0 to 1)", id="alpha-label", classes="dim")
            yield ScaledSparkline(id="alpha-spark")
            yield Static(bits_legend(None), id="bits-legend", classes="dim")
            yield BitsView(id="bits")
            yield Log(id="run-log", max_lines=500)
        yield KeyFooter(show_command_palette=False, compact=True)

    def _head_text(self) -> str:
        c = self.config
        return (f"[b]draft[/] {safe(model_name(getattr(c, 'draft', None)))} -> [b]target[/] "
                f"{safe(model_name(getattr(c, 'target', None)))}   out: {safe(str(getattr(c, 'out', '?')))}")

    def on_mount(self) -> None:
        self.title = "specterm"
        self.sub_title = self.SCREEN_TITLE
        self.state = "running"
        self.update_head()
        self.set_interval(1.0, self.tick)
        self.run_oracle()

    def head_text(self, width: int) -> str:
        """The head line every screen has: the screen, the run (1/1: the one being made), its engine
        and -n, and the machine it runs and times costs on (this machine, never cut)."""
        from specterm.core.report.answer import machine_label
        from specterm.core.decide.machine import this_machine
        from specterm.screens.base import THIS, fit_costs

        n_new = getattr(self.config, "max_new_tokens", None)
        engine = "llama.cpp" if getattr(self.config, "backend", "torch") == "llama.cpp" else "torch"
        fixed = f"{self.SCREEN_TITLE} · run 1/1 · {engine}" + (f" -n {n_new}" if isinstance(n_new, int) else "") + " · "
        machine = fit_costs(f"costs: {machine_label(this_machine().key())}{THIS}", max(width - len(fixed), 8))
        return safe(fixed) + f"[b]{safe(machine)}[/]"

    def update_head(self) -> None:
        self.query_one("#head", Static).update(self.head_text(max(self.size.width - 2, 20)))

    def on_resize(self, event: Any) -> None:
        self.update_head()

    def tick(self) -> None:
        """Once a second: elapsed and ETA run on between the oracle's reports (a long prompt, a
        teacher-forced pass, the wait after Escape); the clock stops when the run has ended."""
        if self.last is None or self.state in ("done", "cancelled", "failed"):
            return
        since = now() - self.last_at
        self.query_one("#run-stats", Static).update(
            stats_line(self.last, eta=self.state == "running" and self.last.phase != "done", since=since))

    def on_unmount(self) -> None:
        # Leaving the app mid-run: ask the oracle to stop at its next check (finished prompts are on disk).
        self.cancel_event.set()

    # -- the worker -------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="oracle", exit_on_error=False)
    def run_oracle(self) -> None:
        oracle: OracleFn
        if self.oracle is not None:
            oracle = self.oracle
        else:
            from specterm.engines.oracle import run_oracle  # torch or llama.cpp loads here, only when running

            oracle = run_oracle

        worker = get_current_worker()

        def on_progress(p: Progress) -> None:
            if worker.is_cancelled:
                self.cancel_event.set()
            self.post_message(messages.OracleProgress(p))

        try:
            if self.check is not None:
                on_progress(Progress("checking", checking_text(self.config)))
                self.check(self.config)
            path = oracle(self.config, on_progress, self.cancel_event)
        except Cancelled:
            out = Path(self.config.out) if getattr(self.config, "out", None) is not None else None
            done = self.last.prompts_done if self.last else 0
            self.post_message(messages.OracleCancelled(out, done))
            return
        except SpectermError as exc:
            self.post_message(messages.OracleFailed(str(exc)))
            return
        except Exception as exc:  # shown on screen, not a traceback: the run on disk is still intact
            self.post_message(messages.OracleFailed(f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(messages.OracleDone(Path(path)))

    # -- messages ---------------------------------------------------------------------------------
    def on_oracle_progress(self, message: messages.OracleProgress) -> None:
        p = message.progress
        self.last = p
        self.last_at = now()
        phase = p.phase
        if phase in ("generating", "teacher-forcing", "saved"):
            where = f"{safe(p.corpus)}/{safe(p.prompt_id)}" if p.prompt_id else ""
            label = "cancelling: finishing the current prompt ..." if self.state == "cancelling" else phase
            self.query_one("#run-phase", Static).update(
                f"[b]{label}[/]  prompt {min(p.prompt_index + 1, max(p.n_prompts, 1))}/{p.n_prompts}  {where}"
            )
        elif p.message:
            self.query_one("#run-phase", Static).update(f"[b]{safe(phase)}[/]  {safe(p.message)}")
        overall = self.query_one("#overall", ProgressBar)
        overall_label, overall_count = self.query_one("#overall-label", Label), self.query_one("#overall-count", Label)
        if phase == "cost":  # the cost measurement is its own phase: its steps, never "0/N saved"
            overall_label.update("costs")
            overall.update(total=max(p.steps, 1), progress=p.step)
            overall_count.update(f"{p.step}/{p.steps} measured" if p.steps else "measuring")
        elif p.n_prompts and phase != "checking":
            overall_label.update("prompts")
            overall.update(total=p.n_prompts, progress=p.prompts_done)
            overall_count.update(f"{p.prompts_done}/{p.n_prompts} saved" + (f" ({p.already} already kept)" if p.already else ""))
        bar = self.query_one("#prompt", ProgressBar)
        if phase in ("generating", "teacher-forcing") and p.max_new_tokens:
            bar.update(total=p.max_new_tokens, progress=min(p.tokens, p.max_new_tokens))
            self.query_one("#prompt-count", Label).update(f"{p.tokens}/{p.max_new_tokens} tokens")
        elif phase == "saved":  # the prompt is whole at its n tokens (an early stop ends below -n)
            bar.update(total=max(p.tokens, 1), progress=max(p.tokens, 1))
            self.query_one("#prompt-count", Label).update(f"{p.tokens}/{p.tokens} tokens")
        if phase in ("generating", "teacher-forcing", "saved", "done", "cancelled"):
            self.query_one("#run-stats", Static).update(stats_line(p, eta=self.state == "running" and phase != "done"))
        if p.bits or phase == "generating":
            self.query_one(BitsView).show(p.bits)
            self.query_one("#bits-legend", Static).update(bits_legend(p.bits))
        if phase == "saved":
            if p.running_alpha is not None:
                self.alpha_history.append(p.running_alpha)
                self.query_one("#alpha-spark", ScaledSparkline).data = list(self.alpha_history)
                self.query_one("#alpha-label", Static).update(
                    f"running alpha over saved prompts (scale 0 to 1): now {p.running_alpha:.3f}"
                )
            self.query_one(Log).write_line(f"saved {p.corpus}/{p.prompt_id}: {len(p.bits)} tokens, alpha {p.bits_alpha:.3f}")
        elif phase in ("loading", "checking", "cost", "warning") and p.message:
            self.query_one(Log).write_line(("warning: " if phase == "warning" else "") + p.message)

    def on_oracle_done(self, message: messages.OracleDone) -> None:
        self.state = "done"
        self.result_path = message.path
        self.query_one("#run-phase", Static).update(
            f"[b $text-success]done[/]: the run is in {safe(str(message.path))}.  Press [b]Enter[/] to open the results."
        )
        self.query_one(Log).write_line(f"done: {message.path}")
        self.refresh_bindings()
        self.sapp.oracle_result = message.path

    def on_oracle_cancelled(self, message: messages.OracleCancelled) -> None:
        self.state = "cancelled"
        has_prompts = message.path is not None and (message.path / "prompts.jsonl").is_file() and \
            (message.path / "prompts.jsonl").stat().st_size > 0
        self.result_path = message.path if has_prompts else None
        kept = f"finished prompts are kept in {safe(str(message.path))}" if has_prompts else "no prompt had finished"
        hint = "  Press [b]Enter[/] to open them." if has_prompts else ""
        self.query_one("#run-phase", Static).update(f"[b $warning]cancelled[/]: {kept}.{hint}")
        self.query_one(Log).write_line(f"cancelled; {kept}")
        self.refresh_bindings()
        self.sapp.oracle_result = self.result_path

    def on_oracle_failed(self, message: messages.OracleFailed) -> None:
        self.state = "failed"
        self.query_one("#run-phase", Static).update(f"[b $error]failed[/]: {safe(message.error)}")
        self.query_one(Log).write_line(f"failed: {message.error}")
        out = getattr(self.config, "out", None)
        if out is not None and Path(out, "prompts.jsonl").is_file() and Path(out, "prompts.jsonl").stat().st_size:
            self.result_path = Path(out)
        self.refresh_bindings()

    # -- keys -------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # False hides a key from the footer while it does nothing (cancel after the end, open before it).
        if action == "cancel":
            return self.state in ("running", "starting")
        if action == "open_results":
            return self.result_path is not None and self.state in ("done", "cancelled", "failed")
        return True

    def action_cancel(self) -> None:
        if self.state not in ("running", "starting"):
            return
        self.state = "cancelling"
        self.cancel_event.set()
        if self.last is not None:  # no ETA once the run is stopping; the clock runs on
            self.query_one("#run-stats", Static).update(stats_line(self.last, eta=False, since=now() - self.last_at))
        self.query_one("#run-phase", Static).update("[b $warning]cancelling[/]: the current step ends, finished prompts stay on disk ...")
        self.refresh_bindings()

    def action_open_results(self) -> None:
        if self.result_path is not None:
            self.sapp.open_results([self.result_path])
