"""The one rule for files TensorForge writes (tensorforge/files/output.py): '-' is standard output;
devices, FIFOs and descriptor names are written in place, never renamed over; an existing file
needs --force; new files are published without replacing one that appeared meanwhile; a file
being written is locked against a second writer."""

import os
import stat
import subprocess
import sys
import threading

import pytest

from tensorforge.errors import TensorForgeError
from tensorforge.files.output import claim, write_output

pytestmark = pytest.mark.timeout(120)


def test_dash_is_standard_output(capsys):
    assert write_output("-", "hello\n", "report") == "standard output"
    assert capsys.readouterr().out == "hello\n"


def test_a_new_file_is_written_and_no_temporary_or_lock_is_left(tmp_path):
    target = tmp_path / "cap.json"
    assert write_output(target, "{}", "capture") == str(target)
    assert target.read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.json"]


def test_an_existing_file_is_refused_without_force_and_kept(tmp_path):
    target = tmp_path / "cap.json"
    target.write_text("precious")
    with pytest.raises(
        TensorForgeError, match=r"capture .*cap.json already exists; choose another path or pass --force"
    ):
        write_output(target, "new", "capture")
    assert target.read_text() == "precious"


def test_force_replaces_atomically_and_keeps_a_symlink(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_output(link, "new", "capture", force=True)
    assert link.is_symlink() and real.read_text() == "new"


def test_a_file_that_appears_while_the_command_runs_is_not_overwritten(tmp_path):
    target = tmp_path / "cap.json"
    destination = claim(target, "capture")
    target.write_text("someone else's")  # appeared after the check, before the write
    written = destination.write("mine")
    destination.release()
    assert target.read_text() == "someone else's"
    assert written == str(tmp_path / "cap.1.json") and (tmp_path / "cap.1.json").read_text() == "mine"


def test_a_second_writer_of_the_same_file_fails_at_once_naming_the_holder(tmp_path):
    target = tmp_path / "cap.json"
    with claim(target, "capture"):
        with pytest.raises(
            TensorForgeError,
            match=rf"capture .* is being written by another tensorforge command \(process {os.getpid()}\)",
        ):
            claim(target, "capture")
        with pytest.raises(TensorForgeError, match="being written by another"):
            claim(target, "capture", force=True)
    with claim(target, "capture") as again:  # released: free again
        again.write("x")
    assert not (tmp_path / ".cap.json.lock").exists()


def test_the_lock_dies_with_its_process(tmp_path):
    target = tmp_path / "cap.json"
    code = (
        "import sys, os; from tensorforge.files.output import claim; c = claim(sys.argv[1], 'capture'); "
        "print('held', flush=True); os._exit(0)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "held"
    assert (tmp_path / ".cap.json.lock").exists()  # what a killed process leaves
    with claim(target, "capture") as destination:  # a stale lock file blocks nothing
        destination.write("ok")
    assert target.read_text() == "ok"
    assert not (tmp_path / ".cap.json.lock").exists()  # and the next writer removes it


def test_a_gz_name_is_written_compressed(tmp_path):
    import gzip

    target = tmp_path / "cap.json.gz"
    assert write_output(target, '{"a": 1}\n', "capture") == str(target)
    data = target.read_bytes()
    assert data[:2] == b"\x1f\x8b" and gzip.decompress(data) == b'{"a": 1}\n'
    assert write_output(target, '{"a": 1}\n', "capture", force=True) and target.read_bytes() == data  # no time in it


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_device_is_written_in_place_and_stays_a_device(device):
    before = os.stat(device)
    assert write_output(device, "data", "capture", force=True) == device
    assert write_output(device, "data", "capture") == device  # no --force needed: nothing is replaced
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_a_full_device_is_one_line():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(TensorForgeError, match=r"cannot write capture /dev/full: No space left on device"):
        write_output("/dev/full", "data", "capture")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_fifo_without_a_reader_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(TensorForgeError, match="it is a FIFO with no reader"):
        write_output(fifo, "data", "capture")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_fifo_with_a_reader_receives_the_text(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # The reader's end is open before the write starts, with no wait on a thread's timing (a busy
    # machine once left a reader thread outside its open() for seconds). A second write end held
    # here keeps the reader from seeing end-of-file before write_output has opened its own.
    read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    held_writer = os.open(fifo, os.O_WRONLY)
    os.set_blocking(read_fd, True)
    got = []

    def read():  # as `cat pipe` would: read to end-of-file
        with os.fdopen(read_fd, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        write_output(fifo, "x" * 200_000, "capture")  # larger than a pipe's buffer: the reader drains it
    finally:
        os.close(held_writer)  # the last writer gone: the reader reaches end-of-file
        reader.join()
    assert got == [b"x" * 200_000] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_dev_stdout_is_the_open_descriptor_and_appends_where_the_shell_appends(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    code = "from tensorforge.files.output import write_output; write_output('/dev/stdout', 'new line\\n', 'report')"
    with open(log, "a") as handle:
        subprocess.run([sys.executable, "-c", code], stdout=handle, check=True, timeout=120)
    assert log.read_text() == "earlier line\nnew line\n"


@pytest.mark.parametrize(
    "given, why",
    [
        ("", "no path given for the capture"),
        ("{tmp}", "it is a folder"),
        ("{tmp}/missing/cap.json", "folder .*missing does not exist"),
        ("/dev/fd/97", "descriptor 97 is not open"),
    ],
    ids=["empty path", "a folder", "a missing folder", "a closed descriptor"],
)
def test_unwritable_destinations_are_one_line(tmp_path, given, why):
    with pytest.raises(TensorForgeError, match=why):
        claim(given.format(tmp=tmp_path), "capture")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_folder_is_refused_before_any_work(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(TensorForgeError, match="is not writable"):
            claim(folder / "cap.json", "capture")
    finally:
        folder.chmod(0o700)


def test_a_path_with_a_nul_byte_is_one_line(tmp_path):
    with pytest.raises(TensorForgeError, match="the path contains a NUL byte"):
        claim(str(tmp_path / "a\0b.json"), "capture")
