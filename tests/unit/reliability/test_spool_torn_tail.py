"""A hook event cut short by a full disk costs that event only, never the next one.

An attack filled the disk while an agent's hook appended to the spool: the write took part of
the line, and the torn piece stayed at the end of the file without its newline. Once space came
back, the next hook's whole line was appended right after it, the two read as one line that is
not JSON, and that valid event was lost. Now a write cut short is taken back, and an append to a
spool that ends inside a line ends that line first.

The full disk is a real one for the writing process: a file-size limit (``RLIMIT_FSIZE``) set in
a child process, which makes the kernel take only what fits, as a full disk does.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jupyter_recap.stores.hookspool import SpoolReader, append, spool_path

resource = pytest.importorskip("resource")


def event(n: int, pad: int = 0) -> dict[str, Any]:
    return {"v": 1, "n": n, "pad": "x" * pad}


# The hook command's append, in a process whose files may not grow past ``limit`` bytes.
FULL_DISK_APPEND = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from jupyter_recap.errors import StoreWriteError
    from jupyter_recap.stores.hookspool import append

    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        append({"v": 1, "n": 2, "pad": "y" * 400}, store=Path(sys.argv[1]))
    except StoreWriteError as error:
        print(error)
    """
)


def test_the_event_after_a_write_cut_short_by_a_full_disk_is_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    reader = SpoolReader(store)
    append(event(1), store=store)
    assert [item["n"] for item in reader.read()] == [1]
    size = spool_path(store).stat().st_size
    # Python ignores SIGXFSZ: the write past the limit returns what fitted, as on a full disk.
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK_APPEND, str(store), str(size + 100)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "part of a line" in done.stdout, done
    assert reader.read() == []
    # Space is back: the next hook's event is read whole.
    append(event(3), store=store)
    assert [item["n"] for item in reader.read()] == [3]
    assert spool_path(store).read_bytes().endswith(b"\n")


def test_an_append_after_a_torn_tail_ends_it_first(tmp_path: Path) -> None:
    # A torn tail that could not be taken back (the writer was killed between its write and
    # the cleanup, or the cleanup itself failed): the next append ends it with a newline.
    store = tmp_path / "store"
    reader = SpoolReader(store)
    append(event(1), store=store)
    with spool_path(store).open("ab") as spool:
        spool.write(b'{"v": 1, "n": 2, "pad": "yyyy')
    assert [item["n"] for item in reader.read()] == [1]
    append(event(3), store=store)
    append(event(4), store=store)
    assert [item["n"] for item in reader.read()] == [3, 4]
