"""One reader for every document a user hands in (tensorforge/files/documents.py): each of the six
readers (suite, ceilings, target file, capture, prices, transformer config) refuses a file
that is not UTF-8, a FIFO, a folder, a missing file or bad syntax in one line naming the file,
with exit status 2 and no traceback."""

import gzip
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden import H200_RUN

from tensorforge.cli.main import main, make_cli
from tensorforge.errors import TensorForgeError
from tensorforge.files.documents import read_document, read_json, read_text, read_toml

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

CAPTURE = H200_RUN


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _read_without_hanging(call):
    """Run `call` in a thread; if it blocks on the FIFO (the old behaviour), release it by
    opening the FIFO's other end, and fail instead of hanging the test session."""
    outcome = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=30)
    return thread.is_alive(), outcome


# -- the reader itself ---------------------------------------------------------------------


def test_reads_utf8_json_and_toml(tmp_path):
    (tmp_path / "a.json").write_text('{"name": "café"}', encoding="utf-8")
    (tmp_path / "a.toml").write_text('name = "café"\n', encoding="utf-8")
    assert read_json(tmp_path / "a.json", "suite file") == {"name": "café"}
    assert read_toml(str(tmp_path / "a.toml"), "suite file") == {"name": "café"}
    assert read_document(tmp_path / "a.json", "x") == read_document(tmp_path / "a.toml", "x")
    assert read_text(tmp_path / "a.toml", "x") == 'name = "café"\n'


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda p: p.write_bytes(b'name = "caf\xe9"\n'),
            "{what} {path}: not UTF-8 text (invalid continuation byte at byte 11)",
        ),
        (lambda p: p.mkdir(), "cannot read {what} {path}: Is a directory"),
        (lambda p: None, "cannot read {what} {path}: No such file or directory"),
        (
            lambda p: p.write_text("name = = 1\n", encoding="utf-8"),
            "{what} {path}: not valid TOML: Invalid value (at line 1, column 8)",
        ),
    ],
)
def test_each_problem_is_one_line_naming_the_file(tmp_path, make, message):
    path = tmp_path / "doc.toml"
    make(path)
    with pytest.raises(TensorForgeError) as info:
        read_toml(path, "suite file")
    assert str(info.value) == message.format(what="suite file", path=path)


def test_bad_json_names_the_file_and_the_place(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text('{"a": 1,}', encoding="utf-8")
    with pytest.raises(TensorForgeError) as info:
        read_document(path, "capture")
    assert str(info.value) == (
        f"capture {path}: not valid JSON: Expecting property name enclosed in double quotes: line 1 column 9 (char 8)"
    )


def test_a_fifo_is_refused_at_once_instead_of_waiting_for_a_writer(tmp_path):
    fifo = _fifo(tmp_path / "suite.toml")
    hung, outcome = _read_without_hanging(lambda: read_toml(fifo, "suite file"))
    if hung:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # let the blocked reader go
    assert not hung, "reading a FIFO blocked"
    assert str(outcome["error"]) == f"cannot read suite file {fifo}: not a regular file (a FIFO)"


def test_a_character_device_is_refused(tmp_path):
    with pytest.raises(
        TensorForgeError,
        match=r"^cannot read target file /dev/null: not a regular file "
        r"\(a character device\)$",
    ):
        read_text("/dev/null", "target file")


# -- every reader, through the command line ------------------------------------------------

HF_OK = '{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}'

# reader -> (file name, valid-looking content, bad-syntax content, command line with {f})
READERS = {
    "suite (TOML)": (
        "suite.toml",
        '[[workload]]\nname = "caf\u00e9"\npreset = "gemm_tiny"\n',
        "[[workload]\n",
        ["predict", "-t", "h200", "--suite", "{f}"],
    ),
    "suite (JSON)": (
        "suite.json",
        '{"workload": [{"name": "caf\u00e9", "preset": "gemm_tiny"}]}',
        "{",
        ["predict", "-t", "h200", "--suite", "{f}"],
    ),
    "ceilings": (
        "cal.json",
        '{"origin": "caf\u00e9", "compute": {"bf16": 1e15}, "dram_bytes_per_s": 1e12}',
        "{,",
        ["predict", "-t", "h200", "-w", "gemm_tiny", "--ceilings", "{f}"],
    ),
    "target file": ("npu.toml", 'name = "caf\u00e9"\n', "name = = 1\n", ["predict", "-t", "{f}", "-w", "gemm_tiny"]),
    "capture": ("cap.json", '{"schema": "caf\u00e9"}', '{"schema": ', ["verify", "{f}"]),
    "prices": (
        "prices.toml",
        '[prices]\n"caf\u00e9" = 1.0\n',
        "[prices\n",
        ["rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--targets", "h200", "--prices", "{f}"],
    ),
    "transformer config": (
        "config.json",
        HF_OK.replace("{", '{"model_type": "caf\u00e9", ', 1),
        "{]",
        ["predict", "-t", "h200", "-w", "transformer:config={f},batch=1,seq=8"],
    ),
}
WHAT = {
    "suite (TOML)": "suite file",
    "suite (JSON)": "suite file",
    "ceilings": "ceilings file",
    "target file": "target file",
    "capture": "capture",
    "prices": "prices file",
    "transformer config": "transformer config",
}


@pytest.fixture(scope="module")
def shared_cli(host):
    return make_cli(lambda: host)


def _one_error_line(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0][len("error: ") :]


def _run(cli, reader, path: Path):
    args = [a.replace("{f}", str(path)) for a in READERS[reader][3]]
    result = [None]
    hung, outcome = _read_without_hanging(lambda: result.__setitem__(0, CliRunner().invoke(cli, args)))
    if hung:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    assert not hung, f"{reader}: the command blocked reading {path}"
    assert "error" not in outcome, outcome
    return result[0]


@pytest.mark.parametrize("reader", READERS)
def test_a_non_utf8_file_is_one_line_for_every_reader(shared_cli, tmp_path, reader):
    name, text, _, _ = READERS[reader]
    path = tmp_path / name
    # The same document saved as Latin-1, as an editor on another system might.
    data = text.encode("latin-1")
    path.write_bytes(data)
    at = data.index("\u00e9".encode("latin-1"))
    line = _one_error_line(_run(shared_cli, reader, path))
    assert line == f"{WHAT[reader]} {path}: not UTF-8 text (invalid continuation byte at byte {at})"
    assert path.read_bytes() == data  # nothing overwritten


@pytest.mark.parametrize("reader", READERS)
def test_a_fifo_is_refused_by_every_reader(shared_cli, tmp_path, reader):
    path = _fifo(tmp_path / READERS[reader][0])
    line = _one_error_line(_run(shared_cli, reader, path))
    assert line == f"cannot read {WHAT[reader]} {path}: not a regular file (a FIFO)"


@pytest.mark.parametrize("reader", READERS)
def test_bad_syntax_is_one_line_for_every_reader(shared_cli, tmp_path, reader):
    name, _, bad, _ = READERS[reader]
    path = tmp_path / name
    path.write_text(bad, encoding="utf-8")
    line = _one_error_line(_run(shared_cli, reader, path))
    syntax = "JSON" if name.endswith(".json") else "TOML"
    assert line.startswith(f"{WHAT[reader]} {path}: not valid {syntax}: "), line


@pytest.mark.parametrize("reader", READERS)
def test_a_missing_file_or_a_folder_is_one_line_for_every_reader(shared_cli, tmp_path, reader, capsys):
    path = tmp_path / READERS[reader][0]
    line = _one_error_line(_run(shared_cli, reader, path))
    assert line == f"cannot read {WHAT[reader]} {path}: No such file or directory"
    path.mkdir()
    # Through the console entry point: click's own check answers first for options declared
    # as files (dir_okay=False), and main() makes its usage error one line too.
    with pytest.raises(SystemExit) as info:
        main([a.replace("{f}", str(path)) for a in READERS[reader][3]])
    captured = capsys.readouterr()
    assert info.value.code == 2 and captured.out == ""
    (line,) = captured.err.splitlines()
    if reader == "transformer config":  # a model folder: its config.json is read, as HF does
        assert line == f"error: cannot read transformer config {path / 'config.json'}: No such file or directory"
    else:
        assert line.startswith("error: ") and str(path) in line and "is a directory" in line.lower(), line


def test_the_committed_capture_still_reads(shared_cli):
    result = CliRunner().invoke(shared_cli, ["verify", str(CAPTURE)])
    assert result.exit_code == 0 and result.stdout.rstrip().endswith("VERIFIED"), result.output


def test_a_gzip_compressed_document_reads_as_its_text(tmp_path):
    """Archived captures are kept as .json.gz: every reader sees the text they hold."""
    packed = tmp_path / "cap.json.gz"
    packed.write_bytes(gzip.compress(CAPTURE.read_bytes()))
    assert read_text(packed, "capture") == CAPTURE.read_text(encoding="utf-8")
    assert read_document(packed, "ceilings file") == read_json(CAPTURE, "capture")  # JSON, by its name


def test_a_compressed_capture_verifies_like_the_plain_one(shared_cli, tmp_path):
    packed = tmp_path / "cap.json.gz"
    packed.write_bytes(gzip.compress(CAPTURE.read_bytes()))
    result = CliRunner().invoke(shared_cli, ["verify", str(packed)])
    assert result.exit_code == 0 and result.stdout.rstrip().endswith("VERIFIED"), result.output


@pytest.mark.parametrize(
    "content, message",
    [
        (lambda: gzip.compress(b'{"a": 1}')[:-6], "gzip content is cut short"),
        (lambda: b"\x1f\x8b" + b"\x00" * 20, "not valid gzip"),
    ],
    ids=["truncated", "garbage"],
)
def test_a_broken_gzip_file_is_one_line_naming_it(tmp_path, content, message):
    path = tmp_path / "cap.json.gz"
    path.write_bytes(content())
    with pytest.raises(TensorForgeError) as err:
        read_text(path, "capture")
    assert str(err.value).startswith(f"capture {path}: {message}") and "\n" not in str(err.value)


def test_a_gzip_bomb_is_refused_before_it_fills_memory(tmp_path):
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b" " * 100_000))
    with pytest.raises(TensorForgeError, match="unpacks past 1000 bytes"):
        read_text(path, "capture", 1000)


def test_a_plain_file_past_the_budget_is_refused_as_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 200_000)
    with pytest.raises(TensorForgeError, match=r"big\.json: larger than 1000 bytes"):
        read_text(path, "capture", 1000)


def test_an_array_of_a_billion_zeros_is_refused_with_little_memory(tmp_path):
    """The 1 MB file that once unpacked to 1 GB and parsed towards 5.7 GB: refused at the budget
    while it unpacks, before anything is parsed. Built from one flushed block repeated (the
    same bytes each time), so the test need not compress a gigabyte; its CRC is never reached."""
    import tracemalloc
    import zlib

    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    head = packer.compress(b"[") + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(b"0," * (1 << 19)) + packer.flush(zlib.Z_FULL_FLUSH)
    path = tmp_path / "arr.json.gz"
    path.write_bytes(head + block * 1023 + packer.compress(b"0]") + packer.flush())
    tracemalloc.start()
    try:
        with pytest.raises(TensorForgeError, match=r"arr\.json\.gz: gzip content unpacks past 32 MiB"):
            read_json(path, "capture")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 << 20, peak


@pytest.mark.parametrize(
    "tail", [lambda: gzip.compress(b'{"b": 2}'), lambda: b"\0\0\0\0", lambda: b"x"], ids=["member", "zeros", "byte"]
)
def test_a_second_gzip_member_or_trailing_bytes_is_refused(tmp_path, tail):
    """`zcat` shows every member; a reader of the first alone would see other content."""
    path = tmp_path / "cap.json.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}') + tail())
    with pytest.raises(TensorForgeError, match="data after the end of its gzip stream"):
        read_json(path, "capture")


@pytest.mark.parametrize(
    "text, message",
    [
        ("[" * 65 + "]" * 65, "nested deeper than 64 levels"),
        ('["' + "[" * 100 + '"]', None),  # brackets in a string are text
        ("[1e999]", "the number 1e999 is not finite (at [0])"),
        ("[NaN]", "NaN is not a number JSON allows (at [0])"),
        ("[-Infinity]", "-Infinity is not a number JSON allows (at [0])"),
        ("[" + "9" * 5000 + "]", "an integer of 5000 digits"),
        # the first refused number in document order, by its key (quoted where it is not bare)
        ('{"a": [1, {"b c": NaN}], "d": 1e999}', 'NaN is not a number JSON allows (at a[1]."b c")'),
    ],
    ids=["deep", "brackets-in-string", "overflow", "nan", "infinity", "5000-digit-int", "nested-key-named"],
)
def test_json_shape_and_numbers_are_checked(tmp_path, text, message):
    path = tmp_path / "d.json"
    path.write_text(text, encoding="utf-8")
    if message is None:
        assert read_json(path, "suite file") == ["[" * 100]
        return
    with pytest.raises(TensorForgeError) as err:
        read_json(path, "suite file")
    assert str(err.value).startswith(f"suite file {path}: ") and message in str(err.value)


def test_too_many_arrays_and_objects_are_refused_before_parsing(tmp_path, monkeypatch):
    import tensorforge.files.bounded as bounded

    monkeypatch.setattr(bounded, "MAX_CONTAINERS", 100)
    path = tmp_path / "d.json"
    path.write_text("[" + "{}," * 100 + "{}]", encoding="utf-8")
    with pytest.raises(TensorForgeError, match="holds more than 100 arrays and objects"):
        read_json(path, "suite file")


@pytest.mark.parametrize("text", ["a = inf\n", "a = nan\n", "a = 1e999\n"])
def test_toml_numbers_are_finite(tmp_path, text):
    path = tmp_path / "t.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TensorForgeError, match=r"is not finite \(at a\)$"):
        read_toml(path, "target file")


def test_a_toml_document_past_its_budget_is_refused(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text("a = [" + "0," * (1 << 20) + "0]\n", encoding="utf-8")
    with pytest.raises(TensorForgeError, match="larger than 1 MiB"):
        read_toml(path, "suite file")


def test_a_path_with_a_nul_byte_is_one_line(tmp_path):
    with pytest.raises(TensorForgeError, match="the path contains a NUL byte"):
        read_json(str(tmp_path / "a\0b.json"), "model config")
