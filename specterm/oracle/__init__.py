"""The torch side of specterm: model loading, the exact greedy oracle, the real speculative decoder,
cost measurement, prompt corpora and `specterm run` / `merge` / `confirm`.

Everything that imports torch or transformers lives here. `specterm.core` (the analytics) never
imports this package, and the screens reach it only through the runner entry points."""
