"""Render the app's screens to plain text at a size (for reading layouts by eye; not a test).

    python tests/screen_text.py 80 24 1 2 3 4 5 6 7 M 1 4
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from specterm.app import make_app

SHIPPED = Path(__file__).resolve().parents[1] / "streams"


def screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)


async def main(width: int, height: int, keys: list[str], paths: list[Path]) -> None:
    app = make_app(paths, boot=50, shuffles=2)
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            print(f"===== after {key}")
            print(screen_text(app))


if __name__ == "__main__":
    w, h, *keys = sys.argv[1:]
    paths = sorted(p for p in SHIPPED.iterdir() if (p / "run.json").is_file())
    asyncio.run(main(int(w), int(h), keys, paths))
