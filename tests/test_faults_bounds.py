"""Fault catalogue: documents built to spend TensorForge's memory or to be read two ways — a gzip
bomb, a 1 MB file holding an array of a billion zeros, a second gzip member or trailing bytes,
a plain file past the budget, numbers past float range, NaN, a 5,000-digit integer, a million
nested objects — handed to every reader. Each is refused in one line naming the file, exit 2,
while it streams in (files/bounded.py), never after filling memory. Also: a capture required to
be trusted is refused on its digest record before its body is parsed."""

import functools
import gzip
import os
import zlib

import pytest
from fault_catalogue import Case, check, ids
from golden import H200_ENERGY_RUN, H200_RUN
from test_faults_inputs import READERS

pytestmark = pytest.mark.timeout(120)


def _repeated_gz(head: bytes, body: bytes, times: int, tail: bytes) -> bytes:
    """A gzip file of head + body * times + tail, from one flushed block of `body` repeated (the
    same bytes each time: no need to compress a gigabyte); its CRC is never reached."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    start = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(body) + packer.flush(zlib.Z_FULL_FLUSH)
    return start + block * times + packer.compress(tail) + packer.flush()


@functools.cache
def _zeros_gz() -> bytes:
    """The issue's 1 MB file: a JSON array of 536 M zeros, 1 GB unpacked."""
    return _repeated_gz(b"[", b"0," * (1 << 19), 1023, b"0]")


@functools.cache
def _bomb() -> bytes:
    """2 MB that unpack to 2 GB of spaces (the issue's bomb was refused only after 2.1 GB)."""
    return _repeated_gz(b"", b" " * (1 << 20), 2048, b"")


def _sparse(path):
    """Past the reader's budget at no disk cost: 33 MiB for JSON, 2 MiB for hand-written TOML."""
    with open(path, "wb") as out:
        out.truncate((33 if ".json" in path.name else 2) << 20)


def _fmt(json_text, toml_text):
    return lambda name: (json_text if ".json" in name else toml_text).encode()


FAULTS = {
    "a gzip bomb": (lambda name: _bomb(), r"gzip content unpacks past"),
    "a 1 MB gzip of a billion zeros": (lambda name: _zeros_gz(), r"gzip content unpacks past"),
    "two gzip members": (
        lambda name: gzip.compress(b"{}") + gzip.compress(b"{}"),
        r"data after the end of its gzip stream",
    ),
    "gzip with trailing bytes": (lambda name: gzip.compress(b"{}") + b"\0\0\0\0", r"data after the end"),
    "past the budget, plain": (None, r"larger than"),
    "a number past float range": (_fmt('{"a": 1e999}', "a = 1e999\n"), r"the number 1e999 is not finite"),
    "NaN": (_fmt('{"a": NaN}', "a = nan\n"), r"(NaN is not a number JSON allows|the number nan is not finite)"),
    "a 5000-digit integer": (
        _fmt('{"a": ' + "9" * 5000 + "}", "a = " + "9" * 5000 + "\n"),
        r"(an integer of 5000 digits|Exceeds the limit)",
    ),
}


def _case(reader, fault):
    argv, name = READERS[reader]
    content, error = FAULTS[fault]
    return Case(
        f"{reader} that is {fault}",
        tuple(a.replace("{f}", name) for a in argv),
        files={name: _sparse if content is None else functools.partial(_write, content, name)},
        error=rf"{name.replace('.', chr(92) + '.')}: {error}",
    )


def _write(content, name, path):
    path.write_bytes(content(name))


# Only JSON has arrays and objects cheap enough to count in millions within its budget; two
# readers stand for all (each case scans a million brackets: a second).
MILLION_OBJECTS = "[" + "{}," * (1 << 20) + "{}]"
CASES = [_case(reader, fault) for reader in READERS for fault in FAULTS] + [
    Case(
        f"{reader} holding a million objects",
        tuple(a.replace("{f}", name) for a in argv),
        files={name: MILLION_OBJECTS},
        error=rf"{name.replace('.', chr(92) + '.')}: holds more than 1048576 arrays and objects",
    )
    for reader, (argv, name) in READERS.items()
    if reader in ("suite (JSON)", "capture to verify")
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_bounded_reading(case, tmp_path):
    check(case, tmp_path)


def _signed_capture_cut_after_its_digest(path):
    """A capture signed by a key nobody here trusts, its body after the digest record cut away:
    parsing the body would fail with 'not valid JSON'; the trust refusal must come first."""
    text = gzip.decompress(H200_ENERGY_RUN.read_bytes()).decode("utf-8")
    at = text.index('\n  "digest": ')
    end = text.index('\n  "measured": ', at)
    path.write_text(text[:end] + "\n  BROKEN", encoding="utf-8")


TRUST_CASES = [
    Case(
        "gate requiring trust refuses an untrusted capture before parsing its body",
        ("gate", "c.json", "c.json", "--require-trusted"),
        files={"c.json": _signed_capture_cut_after_its_digest},
        error=r"c\.json is not signed by a trusted key \(signed by key SHA256:",
    ),
    Case(
        "rightsize requiring trust refuses an untrusted capture before parsing its body",
        ("rightsize", "-w", "gemm_tiny", "--capture", "c.json", "--latency-ms", "1", "--require-trusted"),
        files={"c.json": _signed_capture_cut_after_its_digest},
        error=r"c\.json is not signed by a trusted key",
    ),
    Case(
        "gate requiring trust refuses an unsigned (non-canonical) capture before parsing it",
        ("gate", "c.json", "c.json", "--require-trusted"),
        files={"c.json": '{"digest": {}, "x": [' + "0," * 1000 + "0]}"},
        error=r"c\.json is not signed by a trusted key \(unsigned",
    ),
    Case(
        "verify of a capture on standard input past the budget is one line",
        ("verify", "-"),
        stdin=b" " * (33 << 20),
        error=r"capture on standard input: larger than 32 MiB",
    ),
    Case(
        "verify of a two-member gzip capture on standard input is one line",
        ("verify", "-"),
        stdin=gzip.compress(H200_RUN.read_bytes()) + gzip.compress(b"{}"),
        error=r"capture on standard input: data after the end of its gzip stream",
    ),
]


@pytest.mark.parametrize("case", TRUST_CASES, ids=ids(TRUST_CASES))
def test_trust_before_body(case, tmp_path):
    check(case, tmp_path)


def test_the_zeros_case_is_refused_without_filling_memory(tmp_path):
    """The issue's reproduction, as a real process under `ulimit -v` of 1 GB: one line, exit 2."""
    import resource
    import subprocess
    import sys

    path = tmp_path / "arr.json.gz"
    path.write_bytes(_zeros_gz())
    limit = 1 << 30

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tensorforge.cli.main import main; main(sys.argv[1:])",
            "verify",
            str(path),
        ],
        capture_output=True,
        text=True,
        env={**env, "TENSORFORGE_HOME": str(tmp_path / "home")},
        preexec_fn=cap,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].endswith("gzip content unpacks past 32 MiB"), proc.stderr
