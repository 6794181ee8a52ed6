"""A sample of any size, fast: the repo's generator once, then its families copied.

``litmus.sample.generate_sample`` builds every trajectory in Python (about 130 µs each here:
10 M took 23 minutes). At benchmark sizes the same data is written as copies of one base
sample: the generator's suite and run files for ``base_families`` families, then replica
``k`` (1, 2, ...) of every family with its ids suffixed ``-r{k}`` (family, instance and
register-pair ids; replica 0 is the base itself). Each replica is the base's bytes with the
suffix spliced in at offsets found once, so writing 10 M trajectories is copying bytes.

What this keeps: the generator's schema, scenes, profiles and behaviour mix (each replica
holds exactly the base's), so ingestion, labeling and the board see the same kind of data.
What it does not: texts repeat every ``base_families`` families, so the warehouse compresses
somewhat better than on distinct logs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from litmus.sample import generate_sample

# where a family's suffix goes: after the family part of an instance id (before its "/split"),
# at the end of a family id or a register-pair id
_INSTANCE_ID = re.compile(rb'"instance_id": ?"[^"/]*(?=/)')
_FAMILY_OR_PAIR_ID = re.compile(rb'"(?:family_id|pair_id)": ?"[^"]*(?=")')


@dataclass(frozen=True)
class ReplicatedSample:
    suite_path: Path
    run_paths: list[Path]
    n_trajectories: int
    base_trajectories: int
    replicas: int


def _pieces(text: bytes, *patterns: re.Pattern[bytes]) -> list[bytes]:
    """``text`` cut at the end of every match of ``patterns``: joining the pieces with a
    suffix puts the suffix after every match."""
    cuts = sorted(match.end() for pattern in patterns for match in pattern.finditer(text))
    return [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _suffix(replica: int) -> bytes:
    return f"-r{replica}".encode() if replica else b""


def write_replicated_sample(
    suites_dir: Path, landing_dir: Path, n_trajectories: int, *, base_families: int, work: Path
) -> ReplicatedSample:
    """At least ``n_trajectories`` trajectories (whole replicas of the base) as one suite file
    in ``suites_dir`` and one run file per configuration in ``landing_dir``."""
    base = generate_sample(work / "base", n_families=base_families)
    replicas = math.ceil(n_trajectories / base.n_trajectories)

    document = json.loads(base.suite_path.read_text("utf-8"))
    families = json.dumps(document["families"], ensure_ascii=False, separators=(",", ":"))
    family_pieces = _pieces(families[1:-1].encode(), _INSTANCE_ID, _FAMILY_OR_PAIR_ID)
    shell = json.dumps({**document, "families": []}, ensure_ascii=False)
    head, tail = shell.split('"families": []')
    suite_path = suites_dir / base.suite_path.name
    with suite_path.open("wb") as handle:
        handle.write(f'{head}"families": ['.encode())
        for replica in range(replicas):
            handle.write(b"," if replica else b"")
            handle.write(_suffix(replica).join(family_pieces))
        handle.write(f"]{tail}\n".encode())

    run_paths = []
    for base_path in base.run_paths.values():
        record_pieces = _pieces(base_path.read_bytes(), _INSTANCE_ID)
        path = landing_dir / base_path.name
        with path.open("wb") as handle:
            for replica in range(replicas):
                handle.write(_suffix(replica).join(record_pieces))
        run_paths.append(path)
    return ReplicatedSample(
        suite_path=suite_path,
        run_paths=run_paths,
        n_trajectories=base.n_trajectories * replicas,
        base_trajectories=base.n_trajectories,
        replicas=replicas,
    )
