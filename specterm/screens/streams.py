"""Streams: the prompt list, and one prompt's continuation coloured accepted / rejected, with a
token cursor that shows the target token, the draft's guess, both confidences and beta."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Static

from specterm.core.streams import navigate
from specterm.core.report.text import printable
from specterm.screens.base import ReportScreen, plural
from specterm.core.report.export import markdown_table
from specterm.core.report.fmt import MISSING, fmt
from specterm.widgets.sparkline import ScaledSparkline
from specterm.widgets.rowlist import RowList, cell_widths, natural_widths
from specterm.widgets.tables import safe
from specterm.widgets.tokens import TokenView, stream_labels

ROLLING_WINDOW = 16
SORTS = ("run order", "alpha ascending", "alpha descending")
PROMPT_COLUMNS = [("id", "prompt"), ("alpha", "alpha"), ("n", "n"), ("gate", "gate"), ("corpus", "corpus")]
"""The prompt list's columns; where the pane is too narrow for all, corpus then gate are left out
(the corpus is on the filter line and the head line of the prompt shown; the gate column carries
the repair marks r1, r2, ..., so it stays longer) and a long id ends in an ellipsis."""


def list_pane_width(screen_width: int) -> int:
    """Cells of the prompt pane: 45% of the screen, at least 36 and at most 60 (app.tcss)."""
    return min(max(int(screen_width * 0.45), 36), 60)


MIN_ID = 10
"""Cells an id may shrink to (with its ellipsis) before the gate column is left out."""


def prompt_layout(widths: list[int], width: int) -> tuple[int, list[int]]:
    """(how many of PROMPT_COLUMNS, their widths) that fit in `width` cells, given each column's
    natural width (widest cell or label): drop corpus, then shorten the ids down to MIN_ID cells, then
    drop gate, then shorten the ids further (the id column
    cut to what the other two leave, at least 6 cells; RowList ends a cut id in an ellipsis)."""
    for k in (5, 4):
        if sum(widths[:k]) + 2 * k <= width:
            return k, widths[:k]
    # the gate column (with its repair marks) before long ids: ids give way down to MIN_ID cells first
    others = widths[1] + widths[2] + widths[3] + 6
    if width - others - 2 >= MIN_ID:
        return 4, [min(widths[0], width - others - 2), widths[1], widths[2], widths[3]]
    if sum(widths[:3]) + 6 <= width:
        return 3, widths[:3]
    others = widths[1] + widths[2] + 4
    return 3, [min(widths[0], max(width - others - 2, 6)), widths[1], widths[2]]


def same_tokenizer_runs(app: Any, runs: list[Any]) -> list[Any]:
    """The other runs the app has loaded (every pair, Loader.loaded) whose target model is the same file as
    one of `runs`' (store.model_key: its sha256): they share its tokenizer, so their y spells its ids."""
    from specterm.core.store import model_key

    loaded = getattr(getattr(app, "loading", None), "loaded", None)
    if not loaded:
        return []
    names = {r.name for r in runs}
    keys = {model_key(r.meta.get("target")) for r in runs} - {None}
    return [o for o in loaded[1] if o.name not in names and model_key(o.meta.get("target")) in keys]


def quote(piece: str | None) -> str:
    """A token's text for the info line: repr-like quotes, escapes visible, markup-safe."""
    if piece is None:
        return "?"
    return safe(repr(piece))


def prompt_cells(stream: Any, alpha: float | None = None) -> tuple[Any, ...]:
    """Cells of one prompt-list row: id, alpha, n, gate rate, corpus (a failed gate is flagged; an
    import, which checked no gate, shows n/a). n is "analysed/n" when a gate failure cut the stream:
    alpha is over the analysed positions only. A repaired stream (llama.cpp; torch off float32-on-CPU) shows its repairs after
    the gate rate ("r3": three flipped positions). Plain strings but a failed gate (a Text in bold
    red); `alpha`: navigate.stream_alpha(stream.a) when the caller has it already."""
    gate_cell: Any = MISSING
    if stream.gate is not None:
        gate = stream.gate_rate
        gate_text = f"{gate:.3f}" + (f" r{len(stream.repairs)}" if stream.repairs else "")
        gate_cell = Text(gate_text, style="bold red") if gate < 1.0 else gate_text
    valid, size = stream.valid_len, stream.n
    n = str(size) if valid >= size else f"{valid}/{size}"
    if alpha is None:
        alpha = navigate.stream_alpha(stream.a)
    # printable() first: a tab or newline in an id would otherwise draw a second, phantom line
    return (printable(stream.id), fmt(alpha), n, gate_cell, printable(stream.corpus))


def repair_note(s: Any) -> str:
    """The stream header's note on its gate: the repairs and flipped positions of a repaired stream
    (SPEC 1.3) and the positions still excluded, or the first gate failure of any other stream."""
    if s.repairs is not None:
        if not s.repairs:
            note = "  no repairs"
        else:
            shown = ", ".join(str(t) for t in s.repairs[:8]) + (", ..." if len(s.repairs) > 8 else "")
            note = f"  [b $warning]{len(s.repairs)} repair(s) at t = {shown}[/]"
        excluded = s.excluded
        if excluded.size:
            shown = ", ".join(str(int(t)) for t in excluded[:8]) + (", ..." if excluded.size > 8 else "")
            note += f"  [b $error]{excluded.size} excluded (gate still fails) at t = {shown}[/]"
        return note
    if s.valid_len < s.n:
        return f"  [b $error]gate fails at t = {s.valid_len}: later positions excluded[/]"
    return ""


class StreamsScreen(ReportScreen):
    SCREEN_TITLE = "Streams"
    EXPORT_NAME = "streams"
    NEEDS_REPORT = False
    AUTO_FOCUS = "#tokens"
    PAIR_STATE = ("corpus_filter", "sort", "remember")

    BINDINGS = [
        Binding("slash", "search", "search", id="streams.search", tooltip="Find a prompt by id or text (n / N: next / previous match)"),
        Binding("colon", "jump", "jump", show=False, id="streams.jump", tooltip="Jump the cursor to position t (+k, -k, p%, $ too)"),
        Binding("n", "prompt(1)", "next", id="streams.next_prompt", tooltip="Next match of a search, else the next prompt"),
        Binding("N", "prompt(-1)", "prev match", show=False, id="streams.prev_match", tooltip="Previous match of a search, else the previous prompt"),
        Binding("p", "prompt(-1)", "prev prompt", show=False, id="streams.prev_prompt", tooltip="Previous prompt in the list"),
        Binding("r", "rejection(1)", "reject", id="streams.next_rejection", tooltip="Cursor to the next rejected token"),
        Binding("R", "rejection(-1)", "prev reject", show=False, id="streams.prev_rejection", tooltip="Cursor to the previous rejected token"),
        Binding("l", "longest_run", "longest", show=False, id="streams.longest_run", tooltip="Cursor to the start of the longest accepted run"),
        Binding("c", "filter_corpus", "corpus", id="streams.corpus", tooltip="Show one corpus at a time, or all"),
        Binding("s", "sort", "sort", show=False, id="streams.sort", tooltip="Sort prompts: run order, alpha up, alpha down"),
        Binding("escape", "leave_input", "back", show=False, id="streams.leave_input"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.streams: list[Any] = []
        self.shown: list[int] = []  # indices into self.streams, in list order
        self.rows: list[tuple[Any, ...]] = []  # prompt_cells of each stream, made once per set of streams
        self.alphas = np.zeros(0)  # navigate.stream_alpha of each stream (the sort's key)
        self.cell_widths = np.zeros((0, len(PROMPT_COLUMNS)), dtype=np.int64)  # rowlist.cell_widths of self.rows
        self.selected: int | None = None
        self._layout_key: tuple[str, str, str] | None = None
        self._layout_val: tuple[Any, int] = (None, 0)
        self.corpus_filter: str | None = None
        self.sort = 0
        self.lookup: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, list[Any]]] = {}
        """Per run: the token ids seen in its streams' y, and where each last occurs (navigate.last_occurrences
        over `streams`), so a rejected guess is spelled from the piece of the same id elsewhere."""
        self.spell_from: dict[str, list[str]] = {}
        """Per run, the loaded runs of the same target model whose y spells its ids too (same_tokenizer_runs)."""
        self.matches: list[int] = []
        """Stream indices that match the last `/` search, best first (n / N cycle them)."""
        self.match_note = ""
        """'match k of m' after a search, on the list's title line."""
        self.pending: tuple[str, str, int] | None = None
        """(run, id, token cursor) to show once the streams are there (M back to this pair)."""

    @property
    def remember(self) -> tuple[str, str, int] | None:
        """The prompt shown and its token cursor, kept per model pair."""
        s = self._stream()
        if s is None:
            return None
        return (s.run, s.id, self.query_one(TokenView).cursor)

    @remember.setter
    def remember(self, value: tuple[str, str, int] | None) -> None:
        self.pending = value

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="streams-split"):
            with Vertical(id="prompt-pane"):
                yield Static("", id="prompt-filter", classes="pane-title")
                yield Input(placeholder="/ prompt id or text", id="search-input")
                yield RowList(id="prompts")
            with Vertical(id="stream-pane"):
                yield Static("", id="stream-head", classes="pane-title")
                yield Input(placeholder=": position t, +k, -k, p% or $", id="jump-input")
                yield TokenView(id="tokens")
                yield Static("", id="cursor-info")
                yield Static("rolling alpha (window 16, scale 0 to 1)", id="rolling-label", classes="dim")
                yield ScaledSparkline(id="rolling")

    # -- data -----------------------------------------------------------------------------------
    def show_runs(self, runs: list[Any]) -> None:
        streams = [s for run in runs for s in run.streams]
        if streams is self.streams or [id(s) for s in streams] == [id(s) for s in self.streams]:
            return
        self.streams = streams
        self.alphas = np.array([navigate.stream_alpha(s.a) for s in streams], dtype=np.float64)
        self.rows = [prompt_cells(s, float(a)) for s, a in zip(streams, self.alphas)]
        self.cell_widths = cell_widths(self.rows, len(PROMPT_COLUMNS))
        self.selected = None
        self.lookup = {}
        self.matches = []
        self._take_request()
        self._refresh_list()
        self._restore_pending()
        self.query_one(TokenView).focus()
        self._build_lookup(runs)

    def _take_request(self) -> bool:
        """Apply a corpus filter asked for by Enter on an Overview/Decide row (once)."""
        app = self.sapp
        if not getattr(app, "streams_request", False):
            return False
        app.streams_request = False
        corpus = getattr(app, "streams_corpus", None)
        self.corpus_filter = corpus if corpus in {s.corpus for s in self.streams} else None
        return True

    def on_screen_resume(self) -> None:
        if self.streams and self._take_request():
            self._refresh_list()

    def _restore_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        run, sid, cursor = pending
        index = next((i for i, s in enumerate(self.streams) if s.run == run and s.id == sid), None)
        if index is None or index not in self.shown:
            return
        self.query_one("#prompts", RowList).move_cursor(row=self.shown.index(index), animate=False)
        self.select(index)
        self.query_one(TokenView).move_to(min(cursor, max(self.streams[index].n - 1, 0)))

    # description: without one, Textual builds it from repr() of the arguments, every Run with its
    # numpy arrays (0.3 s and more of the UI thread on the shipped runs, at each visit's load).
    @work(thread=True, exclusive=True, group="streams-lookup", exit_on_error=False, description="token pieces")
    def _build_lookup(self, runs: list[Any]) -> None:
        """Learn where each token id of every stream's y occurs, so rejected guesses can be spelled
        (numpy over the ids: no piece is made until one is shown)."""
        lookup: dict[str, tuple[Any, ...]] = {}
        for run in [*runs, *same_tokenizer_runs(self.app, runs)]:
            kept = [s for s in run.streams if s.y is not None and s.text is not None and s.piece_ends is not None]
            lookup.setdefault(run.name, (*navigate.last_occurrences([s.y for s in kept]), kept))
        spell_from = {run.name: [o.name for o in same_tokenizer_runs(self.app, [run])] for run in runs}
        self.app.call_from_thread(self._lookup_ready, lookup, spell_from)

    def known_piece(self, run: str, token_id: int) -> str | None:
        """The piece of token id `token_id` where it last occurs in run `run`'s y, else in the y of another
        loaded run of the same target model (the same tokenizer: a llama.cpp run's rejected guesses are
        often in the torch run's y of the same GGUF files); None: never seen."""
        for name in (run, *self.spell_from.get(run, [])):
            found = self.lookup.get(name)
            if found is None:
                continue
            ids, where, at, kept = found
            j = int(np.searchsorted(ids, token_id))
            if j >= ids.size or ids[j] != token_id:
                continue
            s = kept[int(where[j])]
            return navigate.piece_at(s.text, s.piece_ends, int(at[j]))
        return None

    def _lookup_ready(self, lookup: dict[Any, Any], spell_from: dict[Any, Any] | None = None) -> None:
        self.lookup = lookup
        self.spell_from = spell_from or {}
        self._show_cursor()

    def _set_changed(self, _: Any = None) -> None:
        """A new width (ReportScreen.on_resize): the prompt list is laid out again for its pane (its
        columns are chosen by width), keeping the prompt shown."""
        if getattr(self, "streams", None):
            self._refresh_list()

    def _refresh_list(self) -> None:
        order = [i for i, s in enumerate(self.streams) if self.corpus_filter in (None, s.corpus)]
        if self.sort:
            ranked = np.argsort(np.nan_to_num(self.alphas[order], nan=-1.0), kind="stable")
            order = [order[j] for j in (ranked if self.sort == 1 else ranked[::-1])]
        self.shown = order
        table = self.query_one("#prompts", RowList)
        width = list_pane_width(self.size.width or self.app.size.width) - 3  # a vertical scrollbar
        rows = [self.rows[i] for i in order]
        labels = [label for _, label in PROMPT_COLUMNS]
        k, widths = prompt_layout(natural_widths(labels, self.cell_widths[order]), width)
        table.set_rows(labels[:k], [str(i) for i in order], rows, widths)
        self.match_note = ""
        self._show_filter()
        self.update_crumb()  # the breadcrumb names the corpus the list is filtered to
        if self.selected in order:
            table.move_cursor(row=order.index(self.selected), animate=False)
        elif order:
            table.move_cursor(row=0, animate=False)
            self.select(order[0])

    def _show_filter(self) -> None:
        """The list's title line: prompts shown, the corpus filter, the sort, and the search match."""
        corpus = self.corpus_filter or "all corpora"
        note = f" · {self.match_note}" if self.match_note else ""
        self.query_one("#prompt-filter", Static).update(
            f"{plural(len(self.shown), 'prompt')} · {safe(corpus)} · {SORTS[self.sort]}{note}"
        )

    def crumb_corpus(self) -> str:
        return self.corpus_filter or "all corpora"

    def select(self, index: int) -> None:
        """Show stream `index` (into self.streams) with the cursor on its first token."""
        if index == self.selected:
            return
        self.selected = index
        s = self.streams[index]
        view = self.query_one(TokenView)
        kept = s.kept if s.one_by_one else s.first_failure  # a count: no n-long temporaries for the mask
        view.set_stream(stream_labels(s.text, s.piece_ends, s.bits), s.bits, kept, prompt=s.prompt)
        where = f"{safe(s.run)}: " if len({st.run for st in self.streams}) > 1 else ""
        head = (f"[b]{where}{safe(s.corpus)}/{safe(s.id)}[/]  alpha {fmt(navigate.stream_alpha(s.a))}"
                f"  n {s.n}  gate " + ("n/a (not checked: imported)" if s.gate is None else f"{s.gate_rate:.3f}"))
        head += repair_note(s)
        if s.stop:
            head += f"  stop {s.stop}"
        self.query_one("#stream-head", Static).update(head)
        # Over all n positions, blank from the gate failure on: the cut shows where it is, never stretched.
        rolling = navigate.rolling_alpha(s.a, ROLLING_WINDOW)
        if rolling.size < s.n:  # each analysed position at its own t; excluded ones blank
            shown = np.full(s.n, np.nan)
            shown[s.kept] = rolling
            rolling = shown
        self.query_one("#rolling", ScaledSparkline).data = rolling  # drawn at the widget's width
        label = f"rolling alpha (window {ROLLING_WINDOW}, scale 0 to 1)"
        if s.repairs is not None and len(s.a) < s.n:
            label += f": {len(s.a)} of {s.n} analysed, blank at the {s.n - len(s.a)} excluded"
        elif len(s.a) < s.n:
            label += f": t < {len(s.a)} of {s.n} analysed, blank after the gate failure"
        self.query_one("#rolling-label", Static).update(label)

    # -- events and keys ------------------------------------------------------------------------
    def on_row_list_row_highlighted(self, event: RowList.RowHighlighted) -> None:
        if event.row_list.id == "prompts":
            self.select(int(event.key))

    def on_token_view_cursor_moved(self, _: TokenView.CursorMoved) -> None:
        self._show_cursor()

    def action_prompt(self, step: int) -> None:
        if not self.shown:
            return
        matches = [i for i in self.matches if i in self.shown]
        if matches:
            index = navigate.cycle_match(matches, self.selected, step)
            if index is not None:
                self.query_one("#prompts", RowList).move_cursor(row=self.shown.index(index), animate=False)
                self.select(index)
                # a status on the list's title line, not a toast: nine presses must not stack nine
                self.match_note = f"match {matches.index(index) + 1} of {len(matches)}"
                self._show_filter()
            return
        pos = self.shown.index(self.selected) if self.selected in self.shown else -1
        pos = min(max(pos + step, 0), len(self.shown) - 1)
        self.query_one("#prompts", RowList).move_cursor(row=pos, animate=False)
        self.select(self.shown[pos])

    def action_rejection(self, step: int) -> None:
        s = self._stream()
        if s is None:
            return
        view = self.query_one(TokenView)
        find = navigate.next_rejection_at if step > 0 else navigate.prev_rejection_at
        t = find(s.a, self._positions(s), view.cursor)
        if t is None:
            self.notify("No rejection " + ("after" if step > 0 else "before") + " the cursor.", timeout=2)
        else:
            view.move_to(t)

    def action_longest_run(self) -> None:
        s = self._stream()
        if s is None:
            return
        start, length = navigate.longest_run_at(s.a, self._positions(s))
        if length == 0:
            self.notify("This prompt has no accepted token.", timeout=2)
        else:
            self.query_one(TokenView).move_to(start)

    def action_filter_corpus(self) -> None:
        corpora = sorted({s.corpus for s in self.streams})
        options: list[str | None] = [None, *corpora]
        self.corpus_filter = options[(options.index(self.corpus_filter) + 1) % len(options)]
        self._refresh_list()

    def action_search(self) -> None:
        box = self.query_one("#search-input", Input)
        box.display = True
        box.focus()

    def action_jump(self) -> None:
        if self._stream() is None:
            self.notify("No prompt is shown to jump in.", timeout=2)
            return
        box = self.query_one("#jump-input", Input)
        box.value = ""
        box.display = True
        box.focus()

    def action_leave_input(self) -> None:
        """Escape: close an open input box; else, after Enter on an Overview/Decide row brought the
        list here, go back to that screen (help: "esc back")."""
        boxes = [box for box in self.query(Input) if box.display]
        for box in boxes:
            box.display = False
        self.query_one(TokenView).focus()
        back = self.sapp.drill_from
        if not boxes and back is not None:
            self.sapp.action_switch_screen(back)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "search-input":
            self.search(event.value)
        elif event.input.id == "jump-input":
            s = self._stream()
            view = self.query_one(TokenView)
            try:
                t, note = navigate.jump_target(event.value, view.cursor, s.n if s is not None else 0)
            except ValueError as exc:
                self.notify(str(exc)[:1].upper() + str(exc)[1:], severity="error")
                return
            view.move_to(t)
            if note is not None:
                self.notify(note, severity="warning")
        self.action_leave_input()

    def search(self, query: str) -> None:
        """Find prompts of the list by id or text (navigate.search_prompts); the first is shown."""
        ids = [self.streams[i].id for i in self.shown]
        prompts = [self.streams[i].prompt for i in self.shown]
        texts = [self.streams[i].text for i in self.shown]
        found = navigate.search_prompts(query, ids, prompts, texts) if query.strip() else []
        self.matches = [self.shown[j] for j in found]
        self.match_note = f"match 1 of {len(self.matches)}" if self.matches and query.strip() else ""
        self._show_filter()
        if not query.strip():
            self.notify("Search cleared.", timeout=2)
            return
        if not self.matches:
            self.notify(f"No prompt id, prompt or continuation contains '{safe(query)}'.", severity="warning", timeout=3)
            return
        first = self.matches[0]
        self.query_one("#prompts", RowList).move_cursor(row=self.shown.index(first), animate=False)
        self.select(first)
        self.notify(f"{len(self.matches)} match(es) for '{safe(query)}': n / N for next / previous.")

    def action_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)
        self._refresh_list()

    # -- cursor info ------------------------------------------------------------------------------
    def _analysed_layout(self, s: Any) -> tuple[Any, int]:
        """(the absolute t of each analysed position of s, None when they are t < valid_len; valid_len),
        worked out once per stream shown: a cursor move on a long stream reads them, never rebuilds them."""
        key = (s.run, s.corpus, s.id)
        if self._layout_key != key:
            self._layout_key, self._layout_val = key, (None if s.contiguous else s.kept_t, s.valid_len)
        return self._layout_val

    def _positions(self, s: Any) -> Any:
        return self._analysed_layout(s)[0]

    def _is_excluded(self, s: Any, t: int) -> bool:
        """Whether position t of s is left out of the analysis (not in Stream.kept)."""
        positions, valid_len = self._analysed_layout(s)
        if positions is None:
            return t >= valid_len
        j = int(np.searchsorted(positions, t))
        return j >= positions.size or int(positions[j]) != t

    def _stream(self) -> Any:
        return None if self.selected is None else self.streams[self.selected]

    def cursor_text(self, s: Any, t: int) -> str:
        """The info lines for token t of stream s (what the Pilot tests read)."""
        a = int(s.bits[t])
        excluded = self._is_excluded(s, t)
        verdict = "[b $text-success]accepted[/]" if a else "[b $text-error]rejected[/]"
        if excluded and s.repairs is not None:
            verdict += " [b $error](the gate still fails here after the repairs: excluded)[/]"
        elif excluded:
            verdict += " [b $error](after the gate failure: excluded)[/]"
        if s.repairs and t in s.repairs:
            verdict += " [b $warning](repaired: y_t is the teacher-forced token)[/]"
        lines = [f"t {t}/{s.n}  a_t = {a} {verdict}"]
        if s.beta is not None:
            lines[0] += f"  beta {float(s.beta[t]):.3f}"
        has_text = s.text is not None and s.piece_ends is not None
        target_piece = navigate.piece_at(s.text, s.piece_ends, t) if has_text else None
        y_id = int(s.y[t]) if s.y is not None else None
        target = f"target {quote(target_piece)}" if target_piece is not None else "target"
        if y_id is not None:
            target += f" id {y_id}"
        if s.target_conf is not None:
            target += f"  conf {float(s.target_conf[t]):.3f}"
        lines.append(target)
        guess_id = int(s.draft_argmax[t]) if s.draft_argmax is not None else None
        if guess_id is not None and guess_id == y_id:
            draft = f"draft  {quote(target_piece)} id {guess_id}" if target_piece is not None else f"draft  id {guess_id}"
        elif guess_id is not None:
            known = self.known_piece(s.run, guess_id)
            draft = f"draft  {quote(known)} id {guess_id}" if known is not None else f"draft  id {guess_id}"
        else:
            draft = "draft  " + ("(= target)" if a else "(guess not stored)")
        if s.draft_conf is not None:
            draft += f"  conf {float(s.draft_conf[t]):.3f}"
        lines.append(draft)
        if not excluded:
            positions = self._positions(s)
            run = navigate.run_at_position(s.a, positions, t)
            nxt = navigate.next_rejection_at(s.a, positions, t)
            where = f"run of {run[1]} from t {run[0]}" if run is not None else "rejected"
            lines.append(where + (f" · next reject t {nxt}" if nxt is not None else " · no reject after"))
        return "\n".join(lines)

    def _show_cursor(self) -> None:
        s = self._stream()
        info = self.query_one("#cursor-info", Static)
        if s is None or s.n == 0:
            info.update("(empty stream)" if s is not None else "")
            return
        t = min(self.query_one(TokenView).cursor, s.n - 1)
        info.update(self.cursor_text(s, t))

    # -- export -------------------------------------------------------------------------------------
    def export_markdown(self) -> str:
        """The prompt list as shown (filter and sort applied), under a heading and its context."""
        headers = [label for _, label in PROMPT_COLUMNS]
        rows = [[str(c) for c in self.rows[i]] for i in self.shown]
        corpus = self.corpus_filter or "all corpora"
        return (f"## Streams: prompt list\n\n{self.export_context()} · corpus: {printable(corpus)} · sort: {SORTS[self.sort]}\n\n"
                + markdown_table(headers, rows) + "\n")
