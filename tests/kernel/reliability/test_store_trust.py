"""A store someone else can write is never trusted, and no link in it is ever followed.

What used to happen: with ``JUPYTER_RECAP_HOME`` created first by another local user (0777), the
person's kernel resumed a planted session and handed its planted tasks and notes to the agent's
system prompt; a 1777 directory lost its sticky bit to a chmod 0700; a session file linked to a
file elsewhere got entries appended and its mode changed; a linked ``memory/`` or ``.lock`` got
written through.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from kernelutil import execute, running_kernel, stream_text
from storeutil import (
    OTHER_UID,
    PAYLOAD,
    give_away,
    need_root,
    plant_notes,
    plant_session,
    snapshot,
)

from jupyter_recap.errors import StoreWriteError, UnsafeStoreError
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.stores import privatefs
from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.sessions import SessionStore, SessionWriter

pytestmark = pytest.mark.timeout(120)

SETUP = "import agentmagic\nagent = agentmagic.install(get_ipython())"


def _kernel_env(store: Path, notebook: Path) -> dict[str, str]:
    return {
        "JUPYTER_RECAP_HOME": str(store),
        "JPY_SESSION_NAME": str(notebook),
        "JUPYTER_RECAP_MODEL": "offline",
        "JUPYTER_RECAP_LOG": str(store.parent / "recap.log"),
    }


def test_a_store_planted_by_another_user_never_reaches_the_agent(tmp_path: Path) -> None:
    """The attack as reported: another user made the store first and planted a session for
    this notebook and notes for its project. The kernel refuses the store in one line, the
    agent's prompts stay clean, recaps still work, and the directory is left as it was."""
    need_root()
    notebook = tmp_path / "project" / "billing.ipynb"
    notebook.parent.mkdir()
    store = tmp_path / "shared-store"
    plant_session(store, str(notebook))
    plant_notes(store, notebook.parent)
    os.chmod(store, 0o777)
    give_away(store)
    before = snapshot(store)

    with running_kernel(_kernel_env(store, notebook)) as kc:
        execute(kc, SETUP)
        loaded = execute(kc, "%load_ext jupyter_recap")
        err = stream_text(loaded, "stderr")
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "cannot be trusted" in err and f"uid {OTHER_UID}" in err
        shown = stream_text(
            execute(
                kc,
                "import jupyter_recap as jr, warnings\n"
                "warnings.simplefilter('ignore')\n"
                "print(repr(jr.tasks_prompt()), repr(jr.memory_prompt()))\n"
                "print([e.text for e in jr.current()])",
            )
        )
        assert shown.splitlines()[0] == "'' ''"
        assert "planted" not in shown and "curl" not in shown
        # Recaps go on from the live transcript.
        execute(kc, "agent.script.append(lambda p: print('Next: rerun the migration.'))")
        execute(kc, "%%agent\nmigrate the billing tables")
        recap = stream_text(execute(kc, "%recap --model offline\n%recap status"))
        assert "stored sessions not used" in recap
    assert snapshot(store) == before  # nothing written, nothing chmod-ed


def test_a_shared_sticky_directory_keeps_its_mode(tmp_path: Path) -> None:
    """Pointing the store at a shared 1777 directory is refused, never 'repaired': chmod 0700
    would strip the sticky bit of a directory others rely on."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    transcript = Transcript()
    writer = SessionWriter(transcript, store=SessionStore(shared), delay=60)
    transcript.user("fix the loader")
    assert writer.flush() is False
    assert writer.error is not None and "shared directory" in writer.error
    writer.close()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert list(shared.iterdir()) == []
    with pytest.raises(UnsafeStoreError, match="shared directory"):
        SessionStore(shared).list()
    memory = MemoryStore(tmp_path, root=shared / "memory")
    assert memory.prompt_block() == ""
    assert any("shared directory" in w for w in memory.take_warnings())
    with pytest.raises(UnsafeStoreError):
        memory.remember("fact", "the loader reads CSV")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777


def test_a_store_writable_by_others_is_refused_with_the_fix(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    os.chmod(store, 0o777)
    with pytest.raises(UnsafeStoreError) as refused:
        SessionStore(store).records()
    message = str(refused.value)
    assert "\n" not in message and "mode 0777" in message and f"chmod 700 {store}" in message
    assert stat.S_IMODE(store.stat().st_mode) == 0o777


def test_nothing_is_created_inside_a_directory_others_can_write(tmp_path: Path) -> None:
    """A missing store below a writable directory is not created: they could swap it later."""
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    with pytest.raises(UnsafeStoreError, match="lies inside"):
        privatefs.ensure_dir(open_dir / "recap")
    assert not (open_dir / "recap").exists()


def test_a_store_of_another_uid_is_refused(tmp_path: Path) -> None:
    """The ownership rule, checked against a uid that is not the directory's owner."""
    with pytest.raises(UnsafeStoreError, match=rf"belongs to uid {os.geteuid()}, not to you"):
        privatefs.check_dir(tmp_path, uid=os.geteuid() + 1)


def test_files_of_another_user_inside_a_private_store_are_ignored(tmp_path: Path) -> None:
    need_root()
    store = tmp_path / "store"
    notebook = tmp_path / "nb.ipynb"
    planted = plant_session(store, str(notebook))
    notes = plant_notes(store, tmp_path)
    os.chmod(store, 0o700)
    give_away(store / f"{planted}.json", store / f"{planted}.jsonl", notes)
    assert SessionStore(store).records() == []
    assert "belongs to uid" in Path(os.environ["JUPYTER_RECAP_LOG"]).read_text()
    memory = MemoryStore(tmp_path, root=store / "memory")
    assert memory.prompt_block() == ""
    assert any("ignored" in w for w in memory.take_warnings())


# -- links ---------------------------------------------------------------------------------


def test_a_linked_session_file_is_never_written_through(tmp_path: Path) -> None:
    store = tmp_path / "store"
    notebook = str(tmp_path / "nb.ipynb")
    session_id = plant_session(store, notebook)
    os.chmod(store, 0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.chmod(victim, 0o644)
    entries = store / f"{session_id}.jsonl"
    entries.unlink()
    entries.symlink_to(victim)

    sessions = SessionStore(store)
    record = sessions.latest_for(notebook)
    assert record is not None
    with pytest.raises(StoreWriteError, match="symbolic link"):
        SessionWriter(Transcript(), store=sessions, record=record)
    assert sessions.load(session_id)[1].entries == []  # the link is not read either
    assert victim.read_text() == "precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_kernel_on_a_notebook_with_a_linked_session_starts_its_own(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "recap-home"  # the isolated JUPYTER_RECAP_HOME
    notebook = str(tmp_path / "nb.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", notebook)
    session_id = plant_session(store, notebook)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (store / f"{session_id}.jsonl").unlink()
    (store / f"{session_id}.jsonl").symlink_to(victim)
    shell.run_line_magic("load_ext", "jupyter_recap")
    import jupyter_recap as jr

    jr.current().user("a new prompt")
    shell.run_line_magic("recap", "save")
    ext = shell.extension_manager
    assert "jupyter_recap" in ext.loaded
    assert victim.read_text() == "precious\n"
    ids = [r.id for r in SessionStore(store).records(notebook)]
    assert len(ids) == 2 and session_id in ids


def test_a_linked_memory_folder_or_lock_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store / "memory").symlink_to(elsewhere)
    memory = MemoryStore(tmp_path, root=store / "memory")
    with pytest.raises(UnsafeStoreError, match="link"):
        memory.remember("fact", "the tests run with pytest")
    assert list(elsewhere.iterdir()) == []

    (store / "memory").unlink()
    (store / "memory").mkdir(mode=0o700)
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    memory.lock_path.symlink_to(target)
    with pytest.raises(StoreWriteError, match="cannot lock"):
        memory.remember("fact", "the tests run with pytest")
    assert target.read_text() == "keep me\n" and not memory.path.exists()


def test_a_linked_record_header_is_not_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    notebook = str(tmp_path / "nb.ipynb")
    outside = tmp_path / "outside"
    session_id = plant_session(outside, notebook)
    store.mkdir(mode=0o700)
    (store / f"{session_id}.json").symlink_to(outside / f"{session_id}.json")
    assert SessionStore(store).records() == []
    header = json.loads((outside / f"{session_id}.json").read_text())
    assert header["tasks"][0]["text"] == PAYLOAD  # still there, just never believed
