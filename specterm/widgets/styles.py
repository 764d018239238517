"""Styles shared by the screens: the scorecard verdicts as a Rich style (for Text cells) and as
Textual markup (for Static lines), in the theme's success / error / warning colours."""

from __future__ import annotations

VERDICT_STYLE = {"holds": "bold green", "falsified": "bold red", "inconclusive": "bold yellow",
                 "holds in direction, not in size": "bold dark_orange", "not reproduced": "bold red",
                 "too few prompts": "bold yellow"}
VERDICT_MARKUP = {"holds": "b $text-success", "falsified": "b $text-error", "inconclusive": "b $text-warning",
                  "holds in direction, not in size": "b $text-warning", "not reproduced": "b $text-error",
                  "too few prompts": "b $text-warning"}
TOO_FEW = "too few prompts"
"""The start of SPEC 6's "too few prompts (n = K; needs M)": styled by this start, shown whole."""


def verdict_style(verdict: str) -> str:
    """The Rich style of a verdict (any verdict the report holds; "too few prompts (...)" by its start)."""
    return VERDICT_STYLE.get(TOO_FEW if verdict.startswith(TOO_FEW) else verdict, "")


def verdict_markup(verdict: str, borderline: bool = False) -> str:
    """The verdict in its colour as Textual markup (bold when it is not one of the three), marked
    when it is borderline (it differs across bootstrap seeds 0..4)."""
    from textual.markup import escape

    key = TOO_FEW if verdict.startswith(TOO_FEW) else verdict
    return f"[{VERDICT_MARKUP.get(key, 'b')}]{escape(shown_verdict(verdict, borderline))}[/]"


def shown_verdict(verdict: str, borderline: bool) -> str:
    """The verdict as every screen writes it: "(borderline)" after it when the seeds disagree."""
    return verdict + (" (borderline)" if borderline else "")


def cell_verdict(row: object) -> str:
    """A scorecard row's verdict for a narrow table cell: "too few prompts" for a row below the minimum
    (its evidence, beside, opens with the whole "too few prompts (n = K; needs M)"), else its verdict."""
    if getattr(row, "verdict_kind", None) == "too_few_prompts":
        return "too few prompts"
    return str(getattr(row, "verdict", ""))
