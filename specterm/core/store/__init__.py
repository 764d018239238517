"""The stream store: a run is a directory with `run.json` (metadata) and `prompts.jsonl` (records).

One module per job, in import order (each imports only those above it):

- `atomic`:  the one writer idiom (unique temp name beside the target, O_EXCL | O_NOFOLLOW, fsync,
  rename, fsync the directory) and the one sentence for a failed write;
- `records`: a record's codec and validation (Stream, checksums, base64 arrays);
- `models`:  a model's identity (model_key), name (model_label, public_model) and location;
- `runs`:    reading run.json and prompts.jsonl (Run, load_run), discovery under a folder, and which
  runs pool together (pair_key, pool_runs, group_by_models, single_pair);
- `writer`:  the run's lock, new metadata, the append-only RunWriter and resume;
- `rewrite`: whole-run writing: write_run (import), merge_runs, repair_run.

The names below are the store's public interface; import them from `specterm.core.store`.
"""

from specterm.core.store.atomic import (
                                         write_atomic,
                                         write_bytes_atomic,
                                         write_failure,
                                         write_json_atomic,
)
from specterm.core.store.models import (
                                         model_key,
                                         model_label,
                                         model_location,
                                         models_dirs,
                                         public_model,
                                         sha256_file,
)
from specterm.core.store.records import (
                                         BOM,
                                         CHECKSUM_FIELD,
                                         PROB_SLACK,
                                         Stream,
                                         bits_from_str,
                                         bits_to_str,
                                         check_unique,
                                         decode_array,
                                         decode_line,
                                         encode_array,
                                         record_checksum,
                                         record_line,
                                         stream_from_record,
)
from specterm.core.store.rewrite import RepairResult, merge_runs, repair_run, write_run
from specterm.core.store.runs import (
                                         FORMAT,
                                         META_FILE,
                                         RECORDS_FILE,
                                         SCHEMA_VERSION,
                                         Run,
                                         StoredLine,
                                         discover_runs,
                                         find_runs,
                                         group_by_models,
                                         iter_records,
                                         load_run,
                                         load_runs,
                                         load_runs_lenient,
                                         merged_shard_names,
                                         pair_key,
                                         pair_label,
                                         pool_runs,
                                         read_meta,
                                         same_record,
                                         single_pair,
                                         stored_lines,
)
from specterm.core.store.writer import (
                                         LOCK_FILE,
                                         RESUME_SETTINGS,
                                         SETTING_FLAGS,
                                         RunLock,
                                         RunWriter,
                                         check_unlocked,
                                         generation_settings,
                                         hardware_info,
                                         lock_holder,
                                         new_meta,
                                         resume_conflict,
                                         write_meta_atomic,
                                         y_method,
)

__all__ = [
    "BOM", "CHECKSUM_FIELD", "FORMAT", "LOCK_FILE", "META_FILE", "PROB_SLACK", "RECORDS_FILE", "RESUME_SETTINGS",
    "SCHEMA_VERSION", "SETTING_FLAGS", "RepairResult", "Run", "RunLock", "RunWriter", "StoredLine", "Stream",
    "bits_from_str", "bits_to_str", "check_unique", "check_unlocked", "decode_array", "decode_line", "discover_runs",
    "encode_array", "find_runs", "generation_settings", "group_by_models", "hardware_info", "iter_records",
    "load_run", "load_runs", "load_runs_lenient", "lock_holder", "merge_runs", "merged_shard_names", "model_key",
    "model_label", "model_location", "models_dirs", "new_meta", "pair_key", "pair_label", "pool_runs",
    "public_model", "read_meta", "record_checksum", "record_line", "repair_run", "resume_conflict", "same_record",
    "sha256_file", "single_pair", "stored_lines", "stream_from_record", "write_atomic", "write_bytes_atomic",
    "write_failure", "write_json_atomic", "write_meta_atomic", "write_run", "y_method",
]
