"""Reading a document within a budget: bytes (plain or unpacked from gzip) counted while the
file streams in, and a JSON document's nesting and container count checked before the parser
builds anything.

Why: a document is what a user (or whoever sent them the file) hands in, and nothing in it may
decide how much memory TensorForge spends. A 1 MB gzip file holding a valid array of 536 M
zeros once unpacked to 1 GB and parsed to 5.7 GB before a `MemoryError` traceback; a 2 MB gzip
"bomb" was refused only after 2.1 GB. Here no more than the budget is ever unpacked, and the
parsed value of a document within the budget stays a small multiple of it (each number or
string costs a few dozen bytes; arrays and objects, which cost more, are counted).

One gzip member and nothing after it: `zcat` shows every member of a multi-member file while
a reader of the first member alone sees other content, so a second member (or any trailing
bytes) is refused rather than ignored.
"""

from __future__ import annotations

import re
import zlib
from typing import BinaryIO

from tensorforge.errors import TensorForgeError

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 16

# The largest capture measured so far is 1.3 MB of text (ten workloads, every raw sample); a
# JSON document past 32 MiB is not one TensorForge wrote. TOML documents are written by hand
# (suites, target files, prices) and parsed by a pure-Python parser that takes seconds a MiB.
MAX_JSON_BYTES = 32 << 20
MAX_TOML_BYTES = 1 << 20
# No document nests deeper than a dozen levels, nor holds more than a few thousand arrays and
# objects (a capture: about 3,000); each costs 60+ bytes parsed, so they are counted too.
MAX_DEPTH = 64
MAX_CONTAINERS = 1 << 20
# The most digits an integer in a document may have: a count of nanoseconds or bytes has 20;
# a 5,000-digit one ended in Python's int-conversion ValueError traceback.
MAX_INT_DIGITS = 40


def size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def read_limited(stream: BinaryIO, where: str, limit: int) -> bytes:
    """The bytes of `stream` (unpacked when they are gzip), refused past `limit` as they arrive."""
    first = stream.read(CHUNK)
    if first[:2] == GZIP_MAGIC:
        return _gunzip(first, stream, where, limit)
    out = bytearray(first)
    while True:
        if len(out) > limit:
            raise TensorForgeError(f"{where}: larger than {size_text(limit)}, more than any such document holds")
        chunk = stream.read(CHUNK)
        if not chunk:
            return bytes(out)
        out += chunk


def _gunzip(first: bytes, stream: BinaryIO, where: str, limit: int) -> bytes:
    unpacker = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = bytearray()
    data, packed = first, len(first)
    try:
        while True:
            while data and not unpacker.eof:
                # never more than one byte past the budget, however much the input would unpack to
                out += unpacker.decompress(data, limit + 1 - len(out))
                if len(out) > limit:
                    raise TensorForgeError(f"{where}: gzip content unpacks past {size_text(limit)}")
                data = unpacker.unconsumed_tail
            if unpacker.eof:
                if unpacker.unused_data or stream.read(1):
                    raise TensorForgeError(
                        f"{where}: data after the end of its gzip stream (a second gzip member or "
                        "trailing bytes); only single-member files are read"
                    )
                return bytes(out)
            # empty deflate blocks unpack to nothing: the packed size is bounded as well
            if packed > limit:
                raise TensorForgeError(f"{where}: gzip content is larger than {size_text(limit)}")
            data = stream.read(CHUNK)
            packed += len(data)
            if not data:
                raise TensorForgeError(f"{where}: gzip content is cut short")
    except zlib.error as exc:
        raise TensorForgeError(f"{where}: not valid gzip ({exc})") from None


# Everything up to the next bracket (or stray quote) in one match: strings whole (brackets in
# them do not count), the rest in runs. Possessive, so a long run never backtracks.
_TO_NEXT_BRACKET = re.compile(r'(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"|[^"\[\]{}]++)*+([\[\]{}"]|\Z)', re.S)


def check_json_shape(text: str, where: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH or holding more than MAX_CONTAINERS arrays and
    objects, before it is parsed. Malformed text is left to the parser, which names the place."""
    depth = containers = 0
    for match in _TO_NEXT_BRACKET.finditer(text):
        bracket = match.group(1)
        if bracket in ("[", "{"):
            depth += 1
            containers += 1
            if depth > MAX_DEPTH:
                raise TensorForgeError(f"{where}: nested deeper than {MAX_DEPTH} levels")
            if containers > MAX_CONTAINERS:
                raise TensorForgeError(f"{where}: holds more than {MAX_CONTAINERS} arrays and objects")
        elif bracket in ("]", "}"):
            depth -= 1
        else:  # the end, or a string that never closes (the parser says where)
            return


def finite_float(text: str) -> float:
    """A JSON or TOML float that is a number: 1e999 and inf are not figures anything measured."""
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is not finite")
    return value


def bounded_int(text: str) -> int:
    if len(text.lstrip("-+")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")
