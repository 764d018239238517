"""The answer in each serving engine's own words (SPEC 6, SPEC 7 `engine_settings`, `calibration`).

    speedup.py      S on the profile's costs of every draft-length policy an engine can express
                    (fixed g, confidence stop, the Hugging Face heuristic), replayed exactly (SPEC 5)
    names.py        each engine's accepted names, as its own source names them for a stated version
    engines.py      the best expressible policy per engine -> its settings, command and verdict
    calibration.py  the calibration table: decision checks per engine, machine and drafter kind
    counters.py     production counters (llama.cpp, vLLM, SGLang) read back beside the oracle

Pure numpy; no engine is imported.
"""
