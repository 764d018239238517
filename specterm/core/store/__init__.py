"""The stream store: a run is a directory with `run.json` (metadata) and `prompts.jsonl` (records).

One module per job, in import order (each imports only those above it):

- `atomic`:  the one writer idiom (unique temp name beside the target, O_EXCL | O_NOFOLLOW, fsync,
  rename, fsync the directory) and the one sentence for a failed write;
- `records`: a record's codec and validation (Stream, checksums, base64 arrays, bounds);
- `models`:  a model's identity (model_key), name (model_label, public_model) and location;
- `meta`:    run.json: read and validated field by field, generation settings, record bounds;
- `files`:   a run's two files read once, as bytes (RunFiles), for a load and the cache's aliases,
  and discovery under a folder (find_runs, discover_runs);
- `runs`:    loading a run (Run, load_run);
- `pooling`: which runs are analysed together (pair, measurement, pool_runs, group_runs, single_pair);
- `writer`:  the run's lock, new metadata, the append-only RunWriter and resume;
- `rewrite`: whole-run writing: write_run (import), merge_runs, repair_run.

The names below are the store's public interface; import them from `specterm.core.store`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specterm.core.store.atomic import (
                                          write_atomic,
                                          write_bytes_atomic,
                                          write_failure,
                                          write_json_atomic,
    )
    from specterm.core.store.meta import (
                                          FORMAT,
                                          META_FILE,
                                          RECORDS_FILE,
                                          RESUME_SETTINGS,
                                          SCHEMA_VERSION,
                                          SETTING_FLAGS,
                                          generation_settings,
                                          drafter_of,
                                          parse_meta,
                                          read_meta,
                                          record_bounds,
                                          validate_meta,
                                          y_method,
    )
    from specterm.core.store.modelkeys import (
                                          model_key,
                                          model_label,
                                          model_location,
                                          models_dirs,
                                          public_model,
                                          sha256_file,
    )
    from specterm.core.store.pooling import (
                                          PROB_ATOL,
                                          group_label,
                                          group_runs,
                                          measurement_key,
                                          pair_key,
                                          pair_label,
                                          pool_runs,
                                          same_measurement,
                                          settings_difference,
                                          single_pair,
    )
    from specterm.core.store.records import (
                                          BOM,
                                          CHECKSUM_FIELD,
                                          PROB_SLACK,
                                          RESERVED_CORPUS_NAMES,
                                          RecordBounds,
                                          Stream,
                                          bits_from_str,
                                          bits_to_str,
                                          check_corpus_name,
                                          check_unique,
                                          decode_array,
                                          decode_line,
                                          drafter_runs_of,
                                          encode_array,
                                          record_checksum,
                                          record_line,
                                          stream_from_record,
    )
    from specterm.core.store.files import (
                                          RunFiles,
                                          discover_runs,
                                          find_runs,
                                          merged_shard_names,
                                          read_records_file,
                                          read_run_files,
    )
    from specterm.core.store.rewrite import RepairResult, merge_runs, repair_run, write_run
    from specterm.core.store.runs import (
                                          Run,
                                          StoredLine,
                                          iter_records,
                                          load_run,
                                          load_runs,
                                          load_runs_lenient,
                                          prompts_and_positions,
                                          split_damaged_tail,
                                          stored_lines,
    )
    from specterm.core.store.writer import (
                                          LOCK_FILE,
                                          RunLock,
                                          RunWriter,
                                          check_new_run_dir,
                                          check_unlocked,
                                          check_writable,
                                          hardware_info,
                                          lock_holder,
                                          new_meta,
                                          resume_conflict,
                                          write_meta_atomic,
    )

_WHERE: dict[str, str] = {
    **dict.fromkeys((
        "write_atomic", "write_bytes_atomic", "write_failure", "write_json_atomic"
    ), "atomic"),
    **dict.fromkeys((
        "FORMAT", "META_FILE", "RECORDS_FILE", "RESUME_SETTINGS", "SCHEMA_VERSION", "SETTING_FLAGS",
        "drafter_of", "generation_settings", "parse_meta", "read_meta", "record_bounds", "validate_meta", "y_method"
    ), "meta"),
    **dict.fromkeys((
        "model_key", "model_label", "model_location", "models_dirs", "public_model", "sha256_file"
    ), "modelkeys"),
    **dict.fromkeys((
        "PROB_ATOL", "group_label", "group_runs", "measurement_key", "pair_key", "pair_label", "pool_runs",
        "same_measurement", "settings_difference", "single_pair"
    ), "pooling"),
    **dict.fromkeys((
        "BOM", "CHECKSUM_FIELD", "PROB_SLACK", "RESERVED_CORPUS_NAMES", "RecordBounds", "Stream", "bits_from_str",
        "bits_to_str", "check_corpus_name", "check_unique", "decode_array", "decode_line", "drafter_runs_of", "encode_array",
        "record_checksum", "record_line", "stream_from_record"
    ), "records"),
    **dict.fromkeys((
        "RunFiles", "discover_runs", "find_runs", "merged_shard_names", "read_records_file", "read_run_files"
    ), "files"),
    **dict.fromkeys((
        "RepairResult", "merge_runs", "repair_run", "write_run"
    ), "rewrite"),
    **dict.fromkeys((
        "Run", "StoredLine", "iter_records", "load_run", "load_runs", "load_runs_lenient", "prompts_and_positions",
        "split_damaged_tail",
        "stored_lines"
    ), "runs"),
    **dict.fromkeys((
        "LOCK_FILE", "RunLock", "RunWriter", "check_new_run_dir", "check_unlocked", "check_writable", "hardware_info", "lock_holder", "new_meta",
        "resume_conflict", "write_meta_atomic"
    ), "writer"),
}
"""Which submodule defines each public name. The package imports a submodule when one of its names
is first asked for (PEP 562), so that `specterm open`, which reads run.json and the analysis cache
before its first table, does not import numpy (records, pooling) for it (issue 21)."""


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BOM", "CHECKSUM_FIELD", "FORMAT", "LOCK_FILE", "META_FILE", "PROB_ATOL", "PROB_SLACK", "RECORDS_FILE",
    "RESERVED_CORPUS_NAMES", "RESUME_SETTINGS", "SCHEMA_VERSION", "SETTING_FLAGS", "RecordBounds", "RepairResult",
    "Run", "RunFiles", "RunLock", "RunWriter", "StoredLine", "Stream", "bits_from_str", "bits_to_str", "check_corpus_name",
    "check_new_run_dir",
    "check_unique", "check_unlocked", "check_writable", "decode_array", "decode_line", "discover_runs", "drafter_runs_of", "encode_array", "find_runs",
    "drafter_of", "generation_settings", "group_label", "group_runs", "hardware_info", "iter_records", "load_run", "load_runs",
    "load_runs_lenient", "lock_holder", "measurement_key", "merge_runs", "merged_shard_names", "model_key",
    "model_label", "model_location", "models_dirs", "new_meta", "pair_key", "pair_label", "parse_meta", "pool_runs",
    "prompts_and_positions", "public_model",
    "read_meta", "read_records_file", "read_run_files", "record_bounds", "record_checksum", "record_line", "repair_run", "resume_conflict",
    "same_measurement", "settings_difference", "sha256_file", "single_pair", "split_damaged_tail", "stored_lines",
    "stream_from_record", "validate_meta", "write_atomic", "write_bytes_atomic", "write_failure",
    "write_json_atomic", "write_meta_atomic", "write_run", "y_method",
]
