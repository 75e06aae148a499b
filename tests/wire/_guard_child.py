"""Child-process checks for the frame-guard tests: anything that hands bytes to kio's native
reader runs here, so an abort (SIGABRT from Rust's allocation failure handler) ends this process
with a signal and fails the parent test instead of killing pytest.

``python -m tests.wire._guard_child <check> [args]`` prints one JSON line and exits 0, or a
non-zero status when a check fails. Checks:

- ``frames HEX…``: decode each frame (no size prefix); print ``["ok"|"FrameError"|"Unsupported"|"Other:<type>", …]``.
- ``prefixes``: every proper prefix of every valid populated frame of every advertised version
  decodes or raises FrameError; prints the counts.
- ``hypothesis N SEED``: Hypothesis property — random, truncated, mutated and oversized-length
  variants of valid frames of every advertised (key, version) only ever decode or raise
  FrameError/UnsupportedRequest; ``N`` examples.
"""

from __future__ import annotations

import json
import struct
import sys

from wire.dispatch import SUPPORTED
from wire.protocol import FrameError, UnsupportedRequest, decode_request, preload

from tests.wire.kio_samples import sample_frame

PAIRS = [(k, v) for k, (lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)]


def _outcome(frame: bytes) -> str:
    try:
        decode_request(frame, SUPPORTED)
    except FrameError:
        return "FrameError"
    except UnsupportedRequest:
        return "Unsupported"
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails on it
        return f"Other:{type(exc).__name__}:{exc}"
    return "ok"


def check_frames(hexes: list[str]) -> list[str]:
    """Outcome of each hex-encoded frame."""
    return [_outcome(bytes.fromhex(h)) for h in hexes]


def check_prefixes() -> dict:
    """Decode every proper prefix of every valid populated frame."""
    counts: dict[str, int] = {}
    for k, v in PAIRS:
        frame = sample_frame(k, v, 1)
        for n in range(8, len(frame)):
            o = _outcome(frame[:n])
            key = o if o in ("ok", "FrameError") else "Other"
            counts[key] = counts.get(key, 0) + 1
            if key == "Other":
                counts.setdefault("examples", []).append([k, v, n, o])  # type: ignore[arg-type]
    return counts


def check_hypothesis(n: int, seed: int) -> dict:
    """Run the mutation property with ``n`` examples; raise AssertionError on a bad outcome."""
    from hypothesis import HealthCheck, given, seed as hseed, settings, strategies as st

    valid = {(k, v, var): sample_frame(k, v, var) for k, v in PAIRS for var in (0, 1)}
    keys = sorted(valid)
    huge = [b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\x7f", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff", b"\x7f\xff", b"\xff\xff\xff\xff\xff\x01"]
    seen: dict[str, int] = {}

    @st.composite
    def frames(draw):
        k, v, var = draw(st.sampled_from(keys))
        base = bytearray(valid[(k, v, var)])
        kind = draw(st.sampled_from(["random", "truncate", "flip", "length", "splice"]))
        if kind == "random":
            return struct.pack(">hhi", k, v, 1) + draw(st.binary(max_size=64))
        if kind == "truncate":
            return bytes(base[: draw(st.integers(8, max(8, len(base) - 1)))])
        if kind == "flip":
            for _ in range(draw(st.integers(1, 4))):
                i = draw(st.integers(8, max(8, len(base) - 1)))
                if i < len(base):
                    base[i] = draw(st.integers(0, 255))
            return bytes(base)
        if kind == "length":
            i = draw(st.integers(8, len(base)))
            return bytes(base[:i]) + draw(st.sampled_from(huge)) + bytes(base[i:])
        i = draw(st.integers(8, len(base)))
        return bytes(base[:i]) + draw(st.binary(max_size=16)) + bytes(base[i + draw(st.integers(0, 8)) :])

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(frames())
    def prop(frame: bytes) -> None:
        o = _outcome(frame)
        seen[o] = seen.get(o, 0) + 1
        assert o in ("ok", "FrameError", "Unsupported"), o

    prop()
    return seen


def main(argv: list[str]) -> int:
    """Entry point: run the named check, print its JSON result."""
    preload(SUPPORTED)
    check = argv[0]
    if check == "frames":
        out: object = check_frames(argv[1:])
    elif check == "prefixes":
        out = check_prefixes()
    elif check == "hypothesis":
        out = check_hypothesis(int(argv[1]), int(argv[2]))
    else:
        print(f"unknown check {check}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
