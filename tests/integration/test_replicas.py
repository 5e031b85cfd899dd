"""Three replicas on one Chroma server and one Redis agree on everything they answer.

Each replica is a process (`tests/replica_worker.py`) with its own `TieredMemoryStore` on
the same Chroma server, Redis and key prefix, memory scoring, history, and a clock the
driver sets. The driver sends each round to all three at once, so their writes and
counted reads interleave: puts of their own keys and of the same keys, searches and gets
that count accesses, reinforcement and deletes. Rounds are ordered: everything a round
did was acknowledged before the next one starts. Afterwards every replica answers the
same reads without counting an access, and the test requires that:

- the memory-mode queries give the same keys, in the same order, with the same scores;
- each memory's access count is the number of counted reads that returned it, over all
  replicas;
- `memory_history` is the same everywhere, with one event per acknowledged write;
- the knowledge graph (`graph=True`: FalkorDB on the shared Redis) is the same
  everywhere and holds exactly the triples of each memory's final value;
- every acknowledged write holds: the last value of each key, unless it was deleted
  later (of concurrent puts of one key, one won, the same everywhere and the last in
  the history);
- the replicas exit cleanly.

The kill variant ends one replica between its Chroma upsert and the index commit; the
next write of another replica to that namespace repairs it, and the interrupted write is
wholly present or wholly absent in every view. Its graph update never ran: the next
replica to start repairs the graph from the due record (`setup()`).
"""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.conftest import DIMS
from tests.erase_env import ChromaServer

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000.0
STEP = 60.0
REPLY_TIMEOUT = 120.0  # a write may wait out the lock lease of a replica that died
SCORE_TOLERANCE = 1e-9

ANA = ["users", "ana", "memories"]
BEN = ["users", "ben", "memories"]
CAI = ["users", "cai", "memories"]
DANA = ["users", "dana", "memories"]


def mem(
    content: str, memory_type: str, importance: float, occurred: str | None = None
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "content": content,
        "memory_type": memory_type,
        "importance": importance,
    }
    if occurred is not None:
        value["occurred_at"] = occurred
    return value


# --------------------------------------------------------------------------- replicas
class Replica:
    """One worker process: send it ops, read its answers."""

    def __init__(self, name: str, config: dict[str, Any], env: dict[str, str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "tests/replica_worker.py"],
            cwd=ROOT,
            env={
                **os.environ,
                **env,
                "PYTHONPATH": str(ROOT),
                "REPLICA_CONFIG": json.dumps(config),
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self._err_thread = threading.Thread(target=self._pump_stderr, daemon=True)
        self._err_thread.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        self._stderr.extend(self.proc.stderr)

    def send(self, now: float, ops: list[dict[str, Any]]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"now": now, "ops": ops}) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> list[dict[str, Any]] | None:
        """The answers to the last request; None when the process ended instead."""
        line = self._lines.get(timeout=REPLY_TIMEOUT)
        if line is None:
            return None
        return list(json.loads(line)["results"])

    def finish(self) -> tuple[int, str]:
        """Close stdin, wait for the exit; (return code, stderr)."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        self._err_thread.join(timeout=10)
        return code, "".join(self._stderr)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)


@dataclass
class Driver:
    """Sends rounds to replicas and keeps the log of what they acknowledged."""

    replicas: dict[str, Replica]
    now: float = T0
    round: int = 0
    writes: list[tuple[int, str, dict[str, Any], Any]] = field(default_factory=list)
    """(round, replica, op, result) of every acknowledged write."""
    counted: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(namespace JSON, key) -> how many counted reads returned it, over all replicas."""

    def run(self, ops: dict[str, list[dict[str, Any]]]) -> dict[str, list[Any] | None]:
        """Send each replica its ops at once; wait for every answer (None: it died)."""
        self.round += 1
        self.now = T0 + self.round * STEP
        for name, replica_ops in ops.items():
            self.replicas[name].send(self.now, replica_ops)
        replies = {name: self.replicas[name].reply() for name in ops}
        errors = [
            f"{name} {op['op']} (round {self.round}): {r['error']}"
            for name, results in replies.items()
            for op, r in zip(ops[name], results or [], strict=False)
            if "error" in r
        ]
        assert not errors, "\n".join(errors)
        answers: dict[str, list[Any] | None] = {}
        for name, results in replies.items():
            answers[name] = None if results is None else [r["ok"] for r in results]
            for op, result in zip(ops[name], answers[name] or [], strict=False):
                self._record(name, op, result)
        return answers

    def _record(self, name: str, op: dict[str, Any], result: Any) -> None:
        kind = op["op"]
        if kind in ("put", "delete", "reinforce"):
            self.writes.append((self.round, name, op, result))
        elif kind == "get" and result is not None:
            self.counted[(json.dumps(op["ns"]), op["key"])] += 1
        elif kind == "search" and op.get("count", True):
            for hit in result:
                self.counted[(json.dumps(hit["ns"]), hit["key"])] += 1


# --------------------------------------------------------------------------- the model
@dataclass
class Expected:
    """What the acknowledged writes leave under one key."""

    choices: list[dict[str, Any]] | None
    """The possible last values (several when the last puts were concurrent); None: deleted."""
    events: int
    """Acknowledged writes, so history events."""


def expected_state(writes: list[tuple[int, str, dict[str, Any], Any]]) -> dict[str, Expected]:
    """Apply the acknowledged writes round by round.

    Puts of one key in one round are concurrent: any of them may be last. Rounds never
    mix a put of a key with a reinforce or delete of it, so this is the whole truth.
    """
    state: dict[str, Expected] = {}
    by_round: dict[int, list[tuple[dict[str, Any], Any]]] = {}
    for rnd, _, op, result in writes:
        by_round.setdefault(rnd, []).append((op, result))
    for rnd in sorted(by_round):
        puts: dict[str, list[dict[str, Any]]] = {}
        for op, result in by_round[rnd]:
            if op["op"] == "put":
                for ns, key, value in op["items"]:
                    puts.setdefault(json.dumps([ns, key]), []).append(value)
                continue
            name = json.dumps([op["ns"], op["key"]])
            assert name not in puts, f"round {rnd} mixes a put of {name} with a {op['op']}"
            prior = state.get(name)
            if op["op"] == "delete":
                assert prior is not None and prior.choices is not None, f"{name} not stored"
                state[name] = Expected(None, prior.events + 1)
            elif result is not None:  # a reinforce of a stored memory
                assert prior is not None and prior.choices is not None and len(prior.choices) == 1
                value = prior.choices[0]
                importance = min(1.0, max(0.0, value["importance"] + op["delta"]))
                state[name] = Expected([{**value, "importance": importance}], prior.events + 1)
        for name, values in puts.items():
            prior = state.get(name)
            state[name] = Expected(values, (prior.events if prior else 0) + len(values))
    return state


def same_value(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Equal values, importance to `SCORE_TOLERANCE` (reinforcement sums floats)."""
    if a is None or b is None:
        return a is b
    rest_a = {k: v for k, v in a.items() if k != "importance"}
    rest_b = {k: v for k, v in b.items() if k != "importance"}
    return rest_a == rest_b and math.isclose(
        a.get("importance", 0.5), b.get("importance", 0.5), abs_tol=SCORE_TOLERANCE
    )


# --------------------------------------------------------------------------- comparing
def disagreement(label: str, views: dict[str, Any]) -> str:
    """Readable account of how the replicas' answers for `label` differ."""
    lines = [f"replicas disagree on {label}:"]
    names = list(views)
    if all(isinstance(v, dict) for v in views.values()):
        keys = sorted(set().union(*[set(v) for v in views.values()]))
        for key in keys:
            vals = {n: views[n].get(key, "<missing>") for n in names}
            if any(v != vals[names[0]] for v in vals.values()):
                lines.append(f"  {key}:")
                lines += [f"    {n}: {json.dumps(v, sort_keys=True)}" for n, v in vals.items()]
        return "\n".join(lines)
    if all(isinstance(v, list) for v in views.values()):
        width = max(len(v) for v in views.values())
        for i in range(width):
            row = {n: (views[n][i] if i < len(views[n]) else "<none>") for n in names}
            mark = " " if all(r == row[names[0]] for r in row.values()) else "!"
            lines.append(f" {mark}[{i}] " + " | ".join(f"{n}: {row[n]}" for n in names))
        return "\n".join(lines)
    lines += [f"  {n}: {views[n]!r}" for n in names]
    return "\n".join(lines)


def event_row(event: dict[str, Any]) -> str:
    content = event["content"]
    text = "-" if content is None else repr(content[:40])
    return f"{event['seq']} {event['event']} {event['actor']} {event['at']:.0f} {text}"


def hit_rows(hits: list[dict[str, Any]]) -> list[str]:
    return [f"{'/'.join(h['ns'])}:{h['key']} {h['score']:.12f}" for h in hits]


def ranking_problems(snapshots: dict[str, dict[str, Any]], queries: list[dict]) -> list[str]:
    """How the replicas' answers to each query differ (keys, order, scores)."""
    problems = []
    for i, query in enumerate(queries):
        views = {n: s["queries"][i] for n, s in snapshots.items()}
        label = f"query {query['query']!r} over {query['prefix']}"
        keys = {n: [(tuple(h["ns"]), h["key"]) for h in v] for n, v in views.items()}
        rows = {n: hit_rows(v) for n, v in views.items()}
        first = next(iter(keys.values()))
        if not first:
            problems.append(f"{label} found nothing: the query no longer exercises ranking")
        elif any(k != first for k in keys.values()):
            problems.append(disagreement(label + " (keys or order)", rows))
        elif any(
            max(scores) - min(scores) > SCORE_TOLERANCE
            for scores in zip(*[[h["score"] for h in v] for v in views.values()], strict=True)
        ):
            problems.append(disagreement(label + " (scores)", rows))
    return problems


def equality_problems(label: str, views: dict[str, Any]) -> list[str]:
    first = next(iter(views.values()))
    return [] if all(v == first for v in views.values()) else [disagreement(label, views)]


def replica_problems(
    snapshots: dict[str, dict[str, Any]],
    queries: list[dict[str, Any]],
    driver: Driver,
    *,
    unsure: frozenset[str] = frozenset(),
) -> list[str]:
    """Every check of the module over the replicas' final snapshots, as problems found.

    `unsure` names keys the test cannot predict (the killed write's): they must agree
    across replicas, but their values and event counts are checked by the caller.
    """
    problems = ranking_problems(snapshots, queries)
    problems += equality_problems(
        "the namespace listings (keys in write order, values)",
        {
            n: {ns: [(h["key"], h["value"]) for h in hits] for ns, hits in s["listings"].items()}
            for n, s in snapshots.items()
        },
    )
    histories = {n: s["history"] for n, s in snapshots.items()}
    if equality_problems("memory_history", histories):
        problems.append(
            disagreement(
                "memory_history (seq event actor time content)",
                {
                    n: {k: [event_row(e) for e in v] for k, v in h.items()}
                    for n, h in histories.items()
                },
            )
        )
    problems += equality_problems(
        "memory statistics (get_memory)", {n: s["memories"] for n, s in snapshots.items()}
    )
    graph_rows = {
        n: [" ".join(map(str, row)) for row in s["graph"]["held"]] for n, s in snapshots.items()
    }
    problems += equality_problems("the knowledge graph (graph_triples)", graph_rows)
    for replica, snap in snapshots.items():
        held, given = ({" ".join(map(str, r)) for r in snap["graph"][k]} for k in ("held", "given"))
        if held != given:
            problems.append(
                f"{replica}: the graph's triples are not those of the memories' values:\n"
                + "".join(f"  only in the graph: {r}\n" for r in sorted(held - given))
                + "".join(f"  only in the values: {r}\n" for r in sorted(given - held))
            )

    for replica, snap in snapshots.items():
        wrong = {}
        for name, m in snap["memories"].items():
            if m is None or name in unsure:
                continue
            ns, key = json.loads(name)
            seen = driver.counted[(json.dumps(ns), key)]
            if m["access_count"] != seen:
                wrong[name] = f"access_count {m['access_count']}, counted returns {seen}"
        if wrong:
            problems.append(
                f"{replica}: access counts differ from the counted returns of all replicas:\n"
                + "\n".join(f"  {k}: {v}" for k, v in wrong.items())
            )

    for replica, snap in snapshots.items():
        history = snap["history"]
        listed = {
            json.dumps([json.loads(ns), h["key"]]): h["value"]
            for ns, hits in snap["listings"].items()
            for h in hits
        }
        lost = []
        for name, exp in expected_state(driver.writes).items():
            if name in unsure:
                continue
            events = history[name]
            if len(events) != exp.events:
                lost.append(
                    f"{name}: {len(events)} history events for {exp.events} acknowledged"
                    f" writes: {[(e['event'], e['actor'], e['at']) for e in events]}"
                )
            got = listed.get(name)
            if exp.choices is None:
                if got is not None:
                    lost.append(f"{name}: deleted, but listed with {got}")
                if events and events[-1]["event"] != "deleted":
                    lost.append(f"{name}: deleted, but its last event is {events[-1]['event']}")
                continue
            if got is None:
                lost.append(f"{name}: acknowledged, but missing (expected one of {exp.choices})")
                continue
            if not any(same_value(got, c) for c in exp.choices):
                lost.append(f"{name}: holds {got}, expected one of {exp.choices}")
            if events and events[-1]["content"] != got["content"]:
                lost.append(
                    f"{name}: holds {got['content']!r} but its last event says"
                    f" {events[-1]['content']!r}"
                )
        extra = sorted(set(listed) - {json.dumps(k) for k in written_keys(driver)} - unsure)
        if extra:
            lost.append(f"listed but never written: {extra}")
        if lost:
            problems.append(f"{replica}: acknowledged writes:\n  " + "\n  ".join(lost))
    return problems


def assert_no_problems(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} problems:\n\n" + "\n\n".join(problems)


def assert_clean_exit(replicas: dict[str, Replica], *, died: str | None = None) -> None:
    bad = {}
    for name, replica in replicas.items():
        code, err = replica.finish()
        want = 3 if name == died else 0
        if code != want or "Traceback" in err:
            bad[name] = f"exit code {code} (want {want}); stderr tail: {err[-3000:]}"
    assert not bad, "replicas did not exit cleanly:\n" + "\n".join(
        f"{k}: {v}" for k, v in bad.items()
    )


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path_factory.mktemp("replicas-chroma"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def start(chroma: ChromaServer, redis_url: str, key_prefix: str) -> Iterator[Any]:
    """`start(name, **env)` starts a replica on the shared Chroma, Redis and key prefix."""
    config = {
        "chroma_host": chroma.host,
        "chroma_port": chroma.port,
        "redis_url": redis_url,
        "key_prefix": key_prefix,
        "dims": DIMS,
        "now": T0,
    }
    started: list[Replica] = []

    def start(name: str, **env: str) -> Replica:
        replica = Replica(name, config, env)
        started.append(replica)
        return replica

    yield start
    for replica in started:
        replica.kill()
    client = redis.Redis.from_url(redis_url)
    try:
        client.delete(f"{key_prefix}_graph", f"telemetry{{{key_prefix}_graph}}")
    finally:
        client.close()


def snapshot_op(namespaces: list[list[str]], keys: list[list[Any]], queries: list[dict]) -> dict:
    return {"op": "snapshot", "namespaces": namespaces, "keys": keys, "queries": queries}


def written_keys(driver: Driver) -> list[list[Any]]:
    names: dict[str, None] = {}
    for _, _, op, _ in driver.writes:
        if op["op"] == "put":
            for ns, key, _ in op["items"]:
                names[json.dumps([ns, key])] = None
        else:
            names[json.dumps([op["ns"], op["key"]])] = None
    return [json.loads(n) for n in names]


def put(*items: tuple[list[str], str, dict[str, Any]]) -> dict[str, Any]:
    return {"op": "put", "items": [list(i) for i in items]}


def search(prefix: list[str], query: str, limit: int, **extra: Any) -> dict[str, Any]:
    return {"op": "search", "prefix": prefix, "query": query, "limit": limit, **extra}


def get(ns: list[str], key: str) -> dict[str, Any]:
    return {"op": "get", "ns": ns, "key": key}


def reinforce(ns: list[str], key: str, delta: float) -> dict[str, Any]:
    return {"op": "reinforce", "ns": ns, "key": key, "delta": delta}


def delete(ns: list[str], key: str) -> dict[str, Any]:
    return {"op": "delete", "ns": ns, "key": key}


def tiers(*namespaces: list[str]) -> list[dict[str, Any]]:
    return [{"op": "tier", "ns": ns} for ns in namespaces]


QUERIES = [
    {"prefix": ["users"], "query": "what does Ana drink in the morning", "limit": 5},
    {"prefix": ANA, "query": "green tea", "limit": 4},
    {"prefix": ["users"], "query": "hiking trip in the mountains in July", "limit": 5},
    {"prefix": BEN, "query": "coffee", "limit": 3},
    {"prefix": ["users"], "query": "who lives in Lisbon", "limit": 6},
    {"prefix": CAI, "query": "When did Cai start learning piano?", "limit": 3},
]


# --------------------------------------------------------------------------- the tests
def test_three_replicas_agree_on_rankings_counts_history_and_values(start: Any) -> None:
    replicas = {name: start(name) for name in ("r0", "r1", "r2")}
    driver = Driver(replicas)
    where = driver.run({n: tiers(ANA, BEN, CAI) for n in replicas})
    assert all(a == ["long", "long", "long"] for a in where.values()), where

    # Round: first puts. Own namespaces, one namespace shared by two replicas, and one
    # key written by all three at once. No counted reads: a memory being added may be
    # found before its statistics exist.
    driver.run(
        {
            "r0": [
                put(
                    (
                        ANA,
                        "a1",
                        mem("Ana drinks green tea every morning before work", "preference", 0.6),
                    )
                ),
                put(
                    (ANA, "a2", mem("Ana lives in Lisbon near the river", "fact", 0.5)),
                    (
                        ANA,
                        "a3",
                        mem(
                            "Ana went hiking in the mountains with Ben last July",
                            "experience",
                            0.5,
                            "2023-07-15T10:00:00+00:00",
                        ),
                    ),
                ),
                put((ANA, "a4", mem("Ana is allergic to peanuts", "fact", 0.9))),
                put((ANA, "note", mem("Ana prefers oolong tea to green tea", "preference", 0.5))),
            ],
            "r1": [
                put((BEN, "b1", mem("Ben drinks black coffee with no sugar", "preference", 0.7))),
                put((BEN, "b2", mem("Ben lives in Porto and works at the harbour", "fact", 0.5))),
                put(
                    (ANA, "note", mem("Ana prefers jasmine tea in the morning", "preference", 0.5))
                ),
                put(
                    (
                        BEN,
                        "b3",
                        mem(
                            "Ben went hiking with Ana in the mountains in July",
                            "experience",
                            0.4,
                            "2023-07-15T09:00:00+00:00",
                        ),
                    ),
                    (BEN, "b4", mem("Ben plays the guitar in a small band", "experience", 0.3)),
                ),
            ],
            "r2": [
                put((ANA, "note", mem("Ana prefers mint tea after hiking", "preference", 0.5))),
                put(
                    (
                        CAI,
                        "c1",
                        mem(
                            "Cai started learning piano in March 2022",
                            "experience",
                            0.5,
                            "2022-03-01T18:00:00+00:00",
                        ),
                    )
                ),
                put(
                    (
                        ANA,
                        "a5",
                        mem(
                            "Ana started drinking black coffee at night while studying",
                            "experience",
                            0.4,
                        ),
                    )
                ),
                put(
                    (CAI, "c2", mem("Cai lives in Lisbon with two cats", "fact", 0.6)),
                    (
                        CAI,
                        "c3",
                        mem("Cai drinks green tea and reads in the evening", "experience", 0.5),
                    ),
                ),
            ],
        }
    )
    # Round: counted reads everywhere while existing memories are rewritten (c1 by two
    # replicas at once).
    driver.run(
        {
            "r0": [
                search(["users"], "green tea", 4),
                put(
                    (
                        CAI,
                        "c1",
                        mem(
                            "Cai started learning piano in March 2022 and practises every evening",
                            "experience",
                            0.5,
                            "2022-03-01T18:00:00+00:00",
                        ),
                    )
                ),
                get(BEN, "b1"),
                search(["users"], "Lisbon", 3),
            ],
            "r1": [
                search(["users"], "green tea", 4),
                put(
                    (
                        CAI,
                        "c1",
                        mem(
                            "Cai started learning the piano in spring 2022 with a teacher",
                            "experience",
                            0.5,
                            "2022-03-01T18:00:00+00:00",
                        ),
                    )
                ),
                get(ANA, "a2"),
                search(BEN, "coffee hiking", 2),
            ],
            "r2": [
                search(["users"], "green tea", 4),
                put(
                    (
                        ANA,
                        "a1",
                        mem(
                            "Ana drinks green tea every morning and jasmine tea at night",
                            "preference",
                            0.6,
                        ),
                    )
                ),
                search(["users"], "what does Ben drink", 3),
                get(CAI, "c2"),
            ],
        }
    )
    # Round: all three reinforce a2 at once; deletes; more counted reads.
    answers = driver.run(
        {
            "r0": [reinforce(ANA, "a2", 0.1), delete(BEN, "b4"), search(ANA, "tea", 3)],
            "r1": [
                reinforce(ANA, "a2", 0.1),
                delete(CAI, "c3"),
                search(["users"], "mountains July", 3),
            ],
            "r2": [reinforce(ANA, "a2", 0.1), reinforce(BEN, "b1", -0.2), get(ANA, "a4")],
        }
    )
    reinforced = sorted(a[0] for a in answers.values() if a is not None)
    serialised = all(
        math.isclose(got, want, abs_tol=SCORE_TOLERANCE)
        for got, want in zip(reinforced, [0.6, 0.7, 0.8], strict=True)
    )
    # Two rounds of the same key written by different replicas one after the other.
    driver.run(
        {
            "r0": [
                put((BEN, "b2", mem("Ben moved from Porto to Lisbon for a new job", "fact", 0.6))),
                search(["users"], "Porto harbour", 2),
            ],
            "r1": [
                put(
                    (
                        ANA,
                        "a3",
                        mem(
                            "Ana went hiking in the Alps with Ben last July and camped by a lake",
                            "experience",
                            0.6,
                            "2023-07-15T10:00:00+00:00",
                        ),
                    )
                )
            ],
            "r2": [get(ANA, "a2"), search(["users"], "who lives in Lisbon", 4)],
        }
    )
    driver.run(
        {
            "r0": [get(ANA, "a3"), search(["users"], "what does Ben drink", 3)],
            "r1": [get(ANA, "a3"), reinforce(ANA, "a1", 0.05)],
            "r2": [
                put(
                    (
                        ANA,
                        "a3",
                        mem(
                            "Ana went hiking in the Alps with Ben and Cai last July",
                            "experience",
                            0.7,
                            "2023-07-15T10:00:00+00:00",
                        ),
                    )
                )
            ],
        }
    )

    snap = snapshot_op([ANA, BEN, CAI], written_keys(driver), QUERIES)
    final = driver.run({n: [snap] for n in replicas})
    snapshots = {n: a[0] for n, a in final.items() if a is not None}
    problems = replica_problems(snapshots, QUERIES, driver)
    if not serialised:
        problems.append(
            f"three concurrent reinforcements of a2 by 0.1 from 0.5 returned {reinforced},"
            " not 0.6, 0.7 and 0.8 (they were not serialised across replicas)"
        )
    assert_no_problems(problems)
    assert_clean_exit(replicas)


KILLED_OLD = "Dana keeps a sourdough starter in the fridge"
KILLED_NEW = "Dana plays the saxophone in a jazz trio on Fridays"
KILLED_ADDED = "Dana bought a vintage saxophone in Lisbon"


def test_a_write_killed_between_chroma_and_the_index_is_repaired_whole(start: Any) -> None:
    replicas = {
        "r0": start("r0"),
        "r1": start("r1"),
        "killed": start("killed", REPLICA_EXIT_ON_UPSERT="1"),
    }
    driver = Driver(replicas)
    driver.run({n: tiers(DANA) for n in replicas})
    driver.run(
        {
            "r0": [
                put((DANA, "d1", mem(KILLED_OLD, "experience", 0.5))),
                put((DANA, "d2", mem("Dana runs along the river every Sunday", "experience", 0.5))),
            ],
            "r1": [
                put((DANA, "d3", mem("Dana works as a nurse at the city hospital", "fact", 0.7))),
                put(
                    (
                        DANA,
                        "d4",
                        mem("Dana drinks green tea after her night shifts", "preference", 0.5),
                    )
                ),
            ],
        }
    )
    driver.run({"r0": [search(DANA, "Dana river tea", 3)], "r1": [get(DANA, "d3")]})

    # The killed replica updates d1 and adds d5 in one batch, and dies once Chroma took it.
    killed = put(
        (DANA, "d1", mem(KILLED_NEW, "experience", 0.5)),
        (DANA, "d5", mem(KILLED_ADDED, "fact", 0.5)),
    )
    died = driver.run({"killed": [killed]})
    assert died == {"killed": None}, f"the replica did not die in its upsert: {died}"

    # Another replica's next write to the namespace repairs it. A fresh replica starts
    # meanwhile and joins the reads after it.
    replicas["fresh"] = start("fresh")  # `driver.replicas` is this dict
    repair = put(
        (DANA, "d2", mem("Dana runs along the river every Sunday morning", "experience", 0.5))
    )
    driver.run({"r0": [repair]})
    driver.run(
        {
            "r0": [search(DANA, "what does Dana do on Sundays", 2), get(DANA, "d4")],
            "r1": [search(DANA, "nurse hospital", 2), reinforce(DANA, "d3", 0.1)],
            "fresh": [search(["users"], "green tea", 3)],
        }
    )

    queries = [
        *QUERIES[:1],
        {"prefix": DANA, "query": "saxophone", "limit": 5},
        {"prefix": DANA, "query": "sourdough starter", "limit": 5},
        {"prefix": ["users"], "query": "what does Dana do on Fridays", "limit": 5},
        {"prefix": DANA, "query": "river Sunday", "limit": 3},
        {"prefix": ["users"], "query": "Lisbon", "limit": 5},
    ]
    keyword = [
        search(DANA, "saxophone", 5, count=False, retrieval="keyword"),
        search(DANA, "sourdough", 5, count=False, retrieval="keyword"),
    ]
    keys = [*written_keys(driver), [DANA, "d5"]]
    alive = ("r0", "r1", "fresh")
    final = driver.run({n: [snapshot_op([DANA], keys, queries), *keyword] for n in alive})
    snapshots = {n: a[0] for n, a in final.items() if a is not None}
    unsure = frozenset({json.dumps([DANA, "d1"]), json.dumps([DANA, "d5"])})
    problems = replica_problems(snapshots, queries, driver, unsure=unsure)

    # The killed write is wholly there or wholly gone, in every replica and every view.
    views = {}
    for name, (snap, sax, sourdough) in final.items():
        d1 = next(
            (h["value"] for h in snap["listings"][json.dumps(DANA)] if h["key"] == "d1"), None
        )
        d5 = next(
            (h["value"] for h in snap["listings"][json.dumps(DANA)] if h["key"] == "d5"), None
        )
        d1_events = snap["history"][json.dumps([DANA, "d1"])]
        d5_events = snap["history"][json.dumps([DANA, "d5"])]
        views[name] = {
            "d1 listed": None if d1 is None else d1["content"],
            "d1 memory": (snap["memories"][json.dumps([DANA, "d1"])] or {}).get("content"),
            "d1 last event": d1_events[-1]["content"] if d1_events else None,
            "d1 events": len(d1_events),
            "d5 listed": None if d5 is None else d5["content"],
            "d5 memory": (snap["memories"][json.dumps([DANA, "d5"])] or {}).get("content"),
            "d5 last event": d5_events[-1]["content"] if d5_events else None,
            "d5 events": len(d5_events),
            "d1 found by 'saxophone'": "d1" in {h["key"] for h in sax},
            "d1 found by 'sourdough'": "d1" in {h["key"] for h in sourdough},
            "d5 found by 'saxophone'": "d5" in {h["key"] for h in sax},
        }
    problems += equality_problems("the killed write", views)
    applied = {
        "d1 listed": KILLED_NEW,
        "d1 memory": KILLED_NEW,
        "d1 last event": KILLED_NEW,
        "d1 events": 2,
        "d5 listed": KILLED_ADDED,
        "d5 memory": KILLED_ADDED,
        "d5 last event": KILLED_ADDED,
        "d5 events": 1,
        "d1 found by 'saxophone'": True,
        "d1 found by 'sourdough'": False,
        "d5 found by 'saxophone'": True,
    }
    absent = {
        "d1 listed": KILLED_OLD,
        "d1 memory": KILLED_OLD,
        "d1 last event": KILLED_OLD,
        "d1 events": 1,
        "d5 listed": None,
        "d5 memory": None,
        "d5 last event": None,
        "d5 events": 0,
        "d1 found by 'saxophone'": False,
        "d1 found by 'sourdough'": True,
        "d5 found by 'saxophone'": False,
    }
    problems += [
        f"{name}: the killed write is half there: {json.dumps(view, indent=1)}"
        for name, view in views.items()
        if view not in (applied, absent)
    ]
    assert_no_problems(problems)
    assert_clean_exit(replicas, died="killed")
