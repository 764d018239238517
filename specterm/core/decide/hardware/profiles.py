"""Cost profiles (SPEC 6 "Cost profiles"): the costs plus the machine, engine and thread count they
were measured on. A decision belongs to a profile; a run keeps any number of them. Pure Python.

Stored in run.json as `profiles`, a list of objects (none is ever overwritten; `specterm costs` and
`specterm confirm` append):

    {"id", "engine": {"name", "version", "build"}, "device": {"kind", "name", "cores", "threads",
     "memory_gb", "driver", "capability"}, "dtype", "context", "clock", "measured_at",
     "load": {"avg", "other_cpu_share"}, "busy", "stop_reason", "source",
     "cost": {<the cost record of oracle costs: medians, samples, robust curve>},
     "batch_cost": {<costs by batch>} | null}

Old runs (no `profiles` key) migrate when read, never rewritten by reading: the top-level `cost`
and every entry of `cost.earlier` that has a decode cost become profiles (`batch_cost` joins the
newest profile of the machine that timed it, found the same way), and
each profile's machine is taken from the record nearest in time that names one (a confirmation
whose session costs are these costs exactly first; else the confirmation or run creation closest to
`measured_at`), or marked unknown; `source` says which. Costs without c_decode (measured before
the decision existed) carry no decision and are left out of the profiles (still kept in the file).

A profile's id is a short digest of its cost record, so the same costs read from two runs (or
migrated twice) get the same id.

Matching, by machine, then by threads: a profile matches this machine when its engine is the run's
engine and its device name is this machine's (the CPU model name, or one of this machine's GPU
names). The profile shown by default is the newest matching one timed (on a CPU) at the thread count
specterm uses here by default (`default_threads`); else the newest matching one at another thread
count, and the report says which threads it was timed at and the command that times this machine's
(`threads_note`); else none matches and outputs say so (`NO_MATCH`). `specterm confirm` measures a
profile first unless one matches at this thread count (decision_profile).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from specterm.core.decide.machine import Machine, short_device_name
from specterm.core.decide.hardware.drift import machine_drift
from specterm.core.decide.hardware.engine_loop import pricing

PROFILES_KEY = "profiles"
BUSY_LOAD_PER_CORE = 1.0     # a 1-minute load average above the core count: busy
BUSY_OTHER_SHARE = 0.25      # other processes taking more than a quarter of one core while timing: busy
NO_MATCH = ("no cost profile of this machine ({machine}): the decisions shown are other machines'; "
            "measure one here with `specterm costs {run}`")


IMPORT = "import"
"""The engine name of an imported run (run.json `imported_from`): its streams come from another tool,
so no engine of specterm's made them and no gate was checked."""


def run_engine(meta: dict[str, Any]) -> str:
    """The engine that made a run: IMPORT for an import, "llama.cpp" (run.json backend) or "torch"."""
    if isinstance(meta.get("imported_from"), str):
        return IMPORT
    backend = meta.get("backend")
    return "llama.cpp" if isinstance(backend, dict) and backend.get("name") == "llama.cpp" else "torch"


def profile_id(cost: dict[str, Any]) -> str:
    """A short digest of a cost record (without its `earlier` list): the same costs, the same id."""
    body = {k: v for k, v in cost.items() if k != "earlier"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=repr)
    return "p" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _when(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class Profile:
    """One cost profile (the stored dict in `record`), with accessors."""

    record: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.record.get("id"))

    @property
    def cost(self) -> dict[str, Any]:
        cost = self.record.get("cost")
        return cost if isinstance(cost, dict) else {}

    @property
    def batch_cost(self) -> dict[str, Any] | None:
        b = self.record.get("batch_cost")
        return b if isinstance(b, dict) else None

    @property
    def engine(self) -> dict[str, Any]:
        e = self.record.get("engine")
        return e if isinstance(e, dict) else {}

    @property
    def device(self) -> dict[str, Any]:
        d = self.record.get("device")
        return d if isinstance(d, dict) else {}

    @property
    def measured_at(self) -> datetime | None:
        return _when(self.record.get("measured_at"))

    @property
    def busy(self) -> bool:
        """Timed on a busy machine: marked so when measured, or (a profile migrated from costs stored
        before profiles, whose record was never marked) its stored load average above the load rule
        (load_busy) on its cores. A profile timed pinned to some CPUs (`load.cpus`) was judged on those
        CPUs when measured; the machine-wide load average does not apply to it."""
        load = self.record.get("load")
        if isinstance(load, dict) and isinstance(load.get("cpus"), list):
            return bool(self.record.get("busy"))
        avg = load.get("avg") if isinstance(load, dict) else None
        return bool(self.record.get("busy")) or load_busy(avg, self.device.get("cores"))

    def matches(self, machine: Machine, engine: str) -> bool:
        """This machine's profile at the thread count specterm uses here (same_machine and same_threads)."""
        return self.same_machine(machine, engine) and self.same_threads(machine)

    def same_machine(self, machine: Machine, engine: str) -> bool:
        """Same engine and same device name: this machine's profile, whatever thread count it was timed at.
        Imported bits (engine IMPORT) were made by no engine here: a profile of this device by any engine
        (the one `specterm costs --target --draft` timed them with) is theirs."""
        if engine != IMPORT and self.engine.get("name") != engine:
            return False
        kind, name = self.device.get("kind"), self.device.get("name")
        if not isinstance(name, str) or not name:
            return False
        if kind == "cuda":
            return name in machine.gpus
        return kind == "cpu" and name == machine.cpu

    def same_threads(self, machine: Machine) -> bool:
        """On a CPU, timed at the thread count specterm uses here (a GPU profile: always)."""
        return self.device.get("kind") != "cpu" or self.device.get("threads") == machine.threads

    @property
    def threads(self) -> int | None:
        t = self.device.get("threads")
        return t if isinstance(t, int) and self.device.get("kind") == "cpu" else None

    def label(self) -> str:
        """The machine and engine in a verdict line: "Intel Xeon Processor, 1 thread, torch 2.13 float32"."""
        d, e = self.device, self.engine
        name = d.get("name")
        where = short_device_name(name) if isinstance(name, str) and name else "unknown machine"
        if d.get("kind") == "cpu" and isinstance(d.get("threads"), int):
            t = int(d["threads"])
            where += f", {t} thread{'s' if t != 1 else ''}"
        version = e.get("version")
        engine = str(e.get("name") or "unknown engine")
        if isinstance(version, str) and version:
            engine += " " + ".".join(version.split("+")[0].split(".")[:2])
        dtype = self.record.get("dtype")
        return f"{where}, {engine}" + (f" {dtype}" if isinstance(dtype, str) and dtype else "")

    def busy_warning(self) -> str | None:
        """The warning a verdict drawn from this profile carries when it was timed on a busy machine."""
        if not self.busy:
            return None
        load = self.record.get("load") or {}
        cores = self.device.get("cores")
        share = load.get("other_cpu_share")
        avg = load.get("avg")
        what = ", ".join([f"load {f'{avg:.2f}' if isinstance(avg, (int, float)) else avg}"
                          + (f" on {cores} cores" if isinstance(cores, int) else ""),
                          *([f"other processes {share} of a core"] if share is not None else [])])
        return f"timed on a busy machine ({what}): re-measure on a quiet machine with `specterm costs`"

    def summary(self, machine: Machine, engine: str) -> dict[str, Any]:
        """SPEC 7's `profiles[]` entry (without the cost samples)."""
        keys = ("id", "engine", "device", "dtype", "context", "clock", "measured_at", "load", "busy", "stop_reason",
                "source")
        out = {k: self.record.get(k) for k in keys}
        out["busy"] = self.busy
        out["label"] = self.label()
        out["matches_this_machine"] = self.same_machine(machine, engine)
        return out


def _records_naming_a_machine(meta: dict[str, Any]) -> list[tuple[datetime, dict[str, Any], str]]:
    """(when, machine record, what) of the run's records that name a CPU: its confirmations (their own
    session costs' time and the confirmation's date) and the run's creation."""
    out: list[tuple[datetime, dict[str, Any], str]] = []
    confs = meta.get("confirmations")
    for rec in confs if isinstance(confs, list) else []:
        if not isinstance(rec, dict) or not isinstance(rec.get("hardware"), dict):
            continue
        for when in (_when((rec.get("cost") or {}).get("measured_at") if isinstance(rec.get("cost"), dict) else None),
                     _when(rec.get("date"))):
            if when is not None:
                out.append((when, rec, f"the confirmation of {rec.get('date')}"))
    created = _when(meta.get("created"))
    if created is not None and isinstance(meta.get("hardware"), dict):
        out.append((created, {"hardware": meta["hardware"], "device": meta.get("device")}, "the run's creation"))
    return out


def _machine_of(meta: dict[str, Any], cost: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The record naming the machine a stored cost was measured on, and how it was found."""
    confs = meta.get("confirmations")
    for rec in confs if isinstance(confs, list) else []:  # the costs are a confirmation's own session costs
        if isinstance(rec, dict) and isinstance(rec.get("cost"), dict) and isinstance(rec.get("hardware"), dict):
            if rec["cost"].get("measured_at") is not None and rec["cost"].get("measured_at") == cost.get("measured_at"):
                return rec, f"migrated: machine of the confirmation of {rec.get('date')} (these are its session costs)"
    when = _when(cost.get("measured_at"))
    if when is None:
        return None, "migrated: machine unknown (the costs record no time)"
    found = _records_naming_a_machine(meta)
    if not found:
        return None, "migrated: machine unknown (no record names one)"
    best = min(found, key=lambda f: abs((f[0] - when).total_seconds()))
    hours = abs((best[0] - when).total_seconds()) / 3600
    return best[1], f"migrated: machine of the record nearest in time ({best[2]}, {hours:.1f} h away)"


def _engine_of(meta: dict[str, Any]) -> dict[str, Any]:
    backend = meta.get("backend")
    if run_engine(meta) == "llama.cpp" and isinstance(backend, dict):
        return {"name": "llama.cpp", "version": backend.get("binding_version"),
                "build": {k: v for k, v in (backend.get("build") or {}).items() if str(k).startswith("GGML_")}}
    return {"name": "torch", "version": None, "build": None}


def load_busy(load: Any, cores: Any) -> bool:
    """The load rule of a busy machine (SPEC 6): a 1-minute load average above BUSY_LOAD_PER_CORE per
    core, plus one (the timing process itself). False where either is unknown."""
    if not isinstance(load, (int, float)) or not isinstance(cores, int) or cores < 1:
        return False
    return float(load) > BUSY_LOAD_PER_CORE * cores + 1


def migrated_profile(meta: dict[str, Any], cost: dict[str, Any], batch_cost: dict[str, Any] | None) -> dict[str, Any]:
    """A profile record for a cost stored before profiles existed (see the module docstring)."""
    rec, source = _machine_of(meta, cost)
    hw = (rec or {}).get("hardware") if isinstance((rec or {}).get("hardware"), dict) else {}
    assert isinstance(hw, dict)
    threads = cost.get("threads")
    if not isinstance(threads, int) and rec is not None and isinstance(rec.get("threads"), int):
        threads = rec["threads"]
    device_kind = (rec or {}).get("device") or meta.get("device") or "cpu"
    described = {"engine": _engine_of(meta),
                 "device": {"kind": device_kind if rec is not None else "unknown",
                            "name": hw.get("cpu") if device_kind == "cpu" else None,
                            "cores": hw.get("cpu_count"), "threads": threads if isinstance(threads, int) else None,
                            "memory_gb": None, "driver": None, "capability": None},
                 "dtype": meta.get("dtype")}
    load = cost.get("load_avg")
    # timed before profiles said whether the machine was busy: the load stored with the costs says it
    busy = load_busy(load[0] if isinstance(load, list) and load else None, hw.get("cpu_count"))
    return new_profile(cost, described, source=source, batch_cost=batch_cost, busy=busy,
                       stop_reason="fixed rounds (measured before profiles existed)")


def _decides(cost: Any) -> bool:
    return isinstance(cost, dict) and cost.get("c_decode_s") is not None


def stored_or_migrated(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's profile records: `profiles` when stored, else migrated from `cost` (oldest first)."""
    stored = meta.get(PROFILES_KEY)
    if isinstance(stored, list):
        return [p for p in stored if isinstance(p, dict)]
    cost = meta.get("cost")
    if not isinstance(cost, dict):
        return []
    out = []
    earlier = cost.get("earlier")
    for old in earlier if isinstance(earlier, list) else []:
        if _decides(old):
            out.append(migrated_profile(meta, old, None))
    if _decides(cost):
        out.append(migrated_profile(meta, cost, None))
    batch = meta.get("batch_cost")
    if isinstance(batch, dict):  # costs by batch belong to the machine that timed them: its newest profile
        rec, _ = _machine_of(meta, batch)
        name = ((rec or {}).get("hardware") or {}).get("cpu") if rec is not None else None
        mine = [p for p in out if name is not None and p["device"].get("name") == name
                and p["device"].get("threads") in (None, batch.get("threads"))]
        if mine:
            mine[-1]["batch_cost"] = batch
    seen: set[str] = set()
    unique = []
    for p in out:
        if p["id"] not in seen:
            seen.add(p["id"])
            unique.append(p)
    return unique


def run_profiles(meta: dict[str, Any]) -> list[Profile]:
    """The run's cost profiles that can decide, oldest first: a stored profile without c_decode_s is
    skipped (a load names it: store/meta.py meta_warnings) and kept in the file."""
    return [Profile(p) for p in stored_or_migrated(meta) if _decides(p.get("cost"))]


def _conf_machine(rec: dict[str, Any]) -> tuple[str, str | None, int | None]:
    """(engine, device name, threads) of a confirmation record."""
    engine = "llama.cpp" if rec.get("engine") == "llama.cpp" else "torch"
    hw = rec.get("hardware") if isinstance(rec.get("hardware"), dict) else {}
    assert isinstance(hw, dict)
    name = hw.get("gpu") if str(rec.get("device") or "").startswith("cuda") else hw.get("cpu")  # "cuda" or "cuda:N"
    threads = rec.get("threads")
    return engine, name if isinstance(name, str) else None, threads if isinstance(threads, int) else None


def confirmation_profile(rec: dict[str, Any], profiles: list[Profile]) -> str | None:
    """The id of the profile a confirmation ran on: the one it names, else the profile of the same
    engine, device name and threads nearest in time (None: no profile of its machine)."""
    named = rec.get("profile")
    if isinstance(named, str) and any(p.id == named for p in profiles):
        return named
    engine, name, threads = _conf_machine(rec)
    same = [p for p in profiles if p.engine.get("name") == engine and p.device.get("name") == name
            and (p.device.get("kind") != "cpu" or p.device.get("threads") == threads)]
    if not same:
        return None
    when = _when(rec.get("date"))
    if when is None:
        return same[-1].id
    def gap(p: Profile) -> float:
        m = p.measured_at
        return abs((m - when).total_seconds()) if m is not None else float("inf")
    return min(same, key=gap).id


def shown_profile(profiles: list[Profile], machine: Machine, engine: str,
                  requested: str | None = None) -> tuple[Profile | None, bool]:
    """(the profile whose decision is shown, whether it matches this machine). `requested`: a profile
    id (or a unique prefix) asked for by name. Default: the newest matching profile; when none
    matches, the newest profile (outputs then say that it is another machine's)."""
    if requested:
        hits = [p for p in profiles if p.id == requested or p.id.startswith(requested)]
        if len(hits) == 1:
            return hits[0], hits[0].same_machine(machine, engine)
        return None, False
    exact = [p for p in profiles if p.matches(machine, engine)]
    mine = [p for p in profiles if p.same_machine(machine, engine)]
    if mine:  # this machine's: at this thread count first, else the newest at another (the report says so)
        return (exact or mine)[-1], True
    return (profiles[-1], False) if profiles else (None, False)


def same_machine(a: Profile, b: Profile) -> bool:
    """Two profiles of one machine: the same engine, device kind and name, and thread count."""
    return (a.engine.get("name") == b.engine.get("name") and a.device.get("kind") == b.device.get("kind")
            and a.device.get("name") == b.device.get("name") and a.device.get("threads") == b.device.get("threads"))


def machine_sessions(meta: dict[str, Any], profile: Profile, profiles: list[Profile] | None = None) -> list[dict[str, Any]]:
    """The cost dicts of every session on `profile`'s machine (SPEC 6 "Intervals that cover"): the profiles of
    the same machine (`same_machine`) and the confirmations that ran on one of them, oldest profile first;
    only those whose forwards were priced as `profile`'s were (engine_loop.pricing: a drift between two ways
    of pricing is not a drift of the machine)."""
    profiles = run_profiles(meta) if profiles is None else profiles
    mine = [p for p in profiles if same_machine(p, profile)]
    ids = {p.id for p in mine}
    confs = meta.get("confirmations")
    out = [p.cost for p in mine]
    out += [c["cost"] for c in (confs if isinstance(confs, list) else [])
            if isinstance(c, dict) and isinstance(c.get("cost"), dict) and confirmation_profile(c, profiles) in ids]
    how = pricing(profile.cost)
    return [c for c in out if pricing(c) == how]


def profile_meta(meta: dict[str, Any], profile: Profile | None, profiles: list[Profile] | None = None) -> dict[str, Any]:
    """The run's metadata as the decision sees it for `profile`: its costs as `cost` and
    `batch_cost`, only the confirmations that ran on it, and `cost_drift`, the drift of costs between
    sessions on its machine (drift.machine_drift over `machine_sessions`) that its prediction intervals
    carry (None: no costs, no confirmations)."""
    out = {k: v for k, v in meta.items() if k not in ("cost", "batch_cost", "confirmations")}
    if profile is None:
        return out
    profiles = run_profiles(meta) if profiles is None else profiles  # the run's, read once by a caller with many
    out["cost"] = profile.cost
    if profile.batch_cost is not None:
        out["batch_cost"] = profile.batch_cost
    confs = meta.get("confirmations")
    out["confirmations"] = [c for c in (confs if isinstance(confs, list) else [])
                            if isinstance(c, dict) and confirmation_profile(c, profiles) == profile.id]
    out["cost_drift"] = machine_drift(machine_sessions(meta, profile, profiles)).as_dict()
    return out


def new_profile(cost: dict[str, Any], described: dict[str, Any], *, source: str,
                batch_cost: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A profile record for costs measured now: the engine's description (engine, device, dtype:
    engines' OpenPair.describe), the cost record, and `extra` (load, busy, stop_reason, context...)."""
    load = cost.get("load_avg")
    record: dict[str, Any] = {
        "id": profile_id(cost),
        **described,
        "context": cost.get("context"),
        "clock": "cpu" if cost.get("decision_clock") == "cpu" else "wall",
        "measured_at": cost.get("measured_at"),
        "load": {"avg": load[0] if isinstance(load, list) and load else None, "other_cpu_share": None},
        "busy": False,
        "stop_reason": "fixed rounds",
        "source": source,
        "cost": {k: v for k, v in cost.items() if k != "earlier"},
        "batch_cost": batch_cost,
    }
    record.update(extra)
    return record


def with_profile(meta: dict[str, Any], record: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's profile records with `record` appended (an old run's migrated profiles first, read from
    `meta` as it is now, before its `cost` changes); a profile already there is kept, never replaced."""
    profiles = stored_or_migrated(meta)
    if all(p.get("id") != record.get("id") for p in profiles):
        profiles.append(record)
    return profiles


def decision_profile(meta: dict[str, Any], machine: Machine) -> Profile | None:
    """The profile whose costs decide for this machine at the threads specterm uses here (the newest
    matching one), or None."""
    shown, matches = shown_profile(run_profiles(meta), machine, run_engine(meta))
    return shown if matches and shown is not None and shown.same_threads(machine) else None


OTHER_THREADS = ("the costs of {run} were timed on this machine at {timed}, not the {here} specterm uses here; "
                 "time {here} with `specterm costs {run} --threads {n}`")


def threads_note(profile: Profile, machine: Machine, run: str) -> str | None:
    """The sentence a decision from this machine's profile timed at another thread count carries: which
    threads it was timed at and the command that times this machine's (None when they are the same)."""
    if profile.same_threads(machine) or profile.threads is None:
        return None
    def words(t: int) -> str:
        return f"{t} thread{'s' if t != 1 else ''}"
    return OTHER_THREADS.format(run=run, timed=words(profile.threads), here=words(machine.threads), n=machine.threads)
