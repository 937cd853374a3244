"""A client of a jupyter-collaboration room, as JupyterLab's front end is one: a Y document
kept in sync with the server's over the room's WebSocket (``pycrdt``'s sync messages), and the
client's awareness (who it says it is).

The room is opened the way the front end opens it: ``PUT /api/collaboration/session/<path>``
gives the file id and the server's session, then ``/api/collaboration/room/<format>:<type>:<id>``
speaks the Y protocol. Used by the chat tests (chatkit's ``RtcChat``) and the notebook review
tests (:class:`RtcNotebook`: another person, or an agent client, editing a notebook).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import websocket  # websocket-client, a dependency of jupyter_server
from labserver import LabServer

RAW = 2
"""jupyter-collaboration's own message type (a save request and its answer)."""


class YRoomClient:
    """One client of one room (see the module)."""

    def __init__(
        self, lab: LabServer, path: str, file_format: str, content_type: str, doc: Any
    ) -> None:
        from pycrdt import Awareness, create_sync_message

        session = lab.api(
            "PUT",
            f"api/collaboration/session/{urllib.parse.quote(path)}",
            {"format": file_format, "type": content_type},
        )
        self.file_id: str = session["fileId"]
        self.doc = doc
        self.awareness = Awareness(doc)
        self.lock = threading.Lock()
        self.replies: dict[int, dict[str, Any]] = {}
        self._saves = 0
        query = urllib.parse.urlencode({"sessionId": session["sessionId"], "token": lab.token})
        room = f"{file_format}:{content_type}:{self.file_id}"
        url = lab.url.replace("http", "ws", 1) + f"api/collaboration/room/{room}?{query}"
        self._socket: Any = websocket.create_connection(url, timeout=30)
        self._socket.settimeout(None)
        self._reader = threading.Thread(target=self._read_frames, daemon=True)
        self._reader.start()
        self.send(create_sync_message(self.doc))

    @property
    def open(self) -> bool:
        return self._socket is not None

    def _read_frames(self) -> None:
        from pycrdt import Decoder, YMessageType, handle_sync_message

        while True:
            try:
                raw = self._socket.recv()
            except (OSError, websocket.WebSocketException, AttributeError):
                return
            if not raw:
                return
            if isinstance(raw, str):
                continue
            if raw[0] == YMessageType.SYNC:
                with self.lock:
                    reply = handle_sync_message(raw[1:], self.doc)
                if reply is not None:
                    self.send(reply)
            elif raw[0] == YMessageType.AWARENESS:
                message = Decoder(raw[1:]).read_message()
                if message is not None:
                    with self.lock:
                        self.awareness.apply_awareness_update(message, "room")
            elif raw[0] == RAW:
                decoder = Decoder(raw[1:])
                with contextlib.suppress(ValueError):
                    reply_json = json.loads(decoder.read_var_string())
                    if isinstance(reply_json, dict) and "responseTo" in reply_json:
                        self.replies[int(reply_json["responseTo"])] = reply_json

    def send(self, message: bytes) -> None:
        with contextlib.suppress(OSError, websocket.WebSocketException, AttributeError):
            self._socket.send_binary(message)

    def change(self, change: Callable[[Any], None]) -> None:
        """Apply ``change(doc)`` in one transaction and send the room the resulting update."""
        from pycrdt import create_update_message

        with self.lock:
            before = self.doc.get_state()
            with self.doc.transaction():
                change(self.doc)
            update = self.doc.get_update(before)
        self.send(create_update_message(update))

    def say_who(self, user: dict[str, Any]) -> None:
        """Tell the room who this client is (its awareness ``user``), as JupyterLab does."""
        from pycrdt import create_awareness_message

        with self.lock:
            self.awareness.set_local_state({"user": user})
            update = self.awareness.encode_awareness_update([self.doc.client_id])
        self.send(create_awareness_message(update))

    def save(self, wait: Callable[..., Any]) -> str:
        """Ask the room to save the document now (the front end's save command); its status.
        ``wait(check, timeout)`` waits for ``check()`` to be true."""
        from pycrdt import Encoder

        self._saves += 1
        save_id = self._saves
        encoder = Encoder()
        encoder.write_var_uint(RAW)
        encoder.write_var_string("save")
        encoder.write_var_uint(save_id)
        self.send(encoder.to_bytes())
        reply: dict[str, Any] = wait(lambda *_: self.replies.get(save_id), 30)
        return str(reply.get("status"))

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._reader.join(timeout=10)
            self._socket = None


class RtcNotebook:
    """A notebook open in its room by another client (a collaborator, an agent's client)."""

    def __init__(self, lab: LabServer, path: str, who: dict[str, Any] | None = None) -> None:
        from pycrdt import Array, Doc, Map

        doc: Any = Doc()
        doc["meta"] = Map()
        doc["cells"] = Array()
        self.room = YRoomClient(lab, path, "json", "notebook", doc)
        self.until(lambda: len(self.room.doc["cells"]) > 0)
        if who is not None:
            self.room.say_who(who)

    def until(self, check: Callable[[], Any], timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            with self.room.lock:
                value = check()
            if value:
                return value
            assert time.monotonic() < deadline, "the room did not get there"
            time.sleep(0.05)

    def cell_ids(self) -> list[str]:
        with self.room.lock:
            return [str(cell.get("id")) for cell in self.room.doc["cells"]]

    def edit(self, cell_id: str, source: str) -> None:
        """Replace the source of cell ``cell_id`` (one transaction, as a paste is)."""

        def write(doc: Any) -> None:
            for cell in doc["cells"]:
                if cell.get("id") == cell_id:
                    text = cell["source"]
                    del text[0 : len(text)]
                    text += source
                    return
            raise KeyError(cell_id)

        self.room.change(write)

    def insert(self, index: int, cell_id: str, source: str) -> None:
        from pycrdt import Array, Map, Text

        def write(doc: Any) -> None:
            cell: Any = Map(
                {
                    "id": cell_id,
                    "cell_type": "code",
                    "source": Text(source),
                    "metadata": Map(),
                    "execution_count": None,
                    "outputs": Array(),
                }
            )
            doc["cells"].insert(index, cell)

        self.room.change(write)

    def delete(self, cell_id: str) -> None:
        def write(doc: Any) -> None:
            index = [cell.get("id") for cell in doc["cells"]].index(cell_id)
            del doc["cells"][index]

        self.room.change(write)

    def ran(self, cell_id: str, count: int, error: str | None = None) -> None:
        """The cell ran (as a kernel client writes its result into the document): its count,
        and an error output when ``error`` (``"KeyError: 'region'"``)."""
        from pycrdt import Map

        def write(doc: Any) -> None:
            for cell in doc["cells"]:
                if cell.get("id") == cell_id:
                    cell["execution_count"] = count
                    outputs = cell["outputs"]
                    del outputs[0 : len(outputs)]
                    if error is not None:
                        name, _, value = error.partition(": ")
                        output = {"output_type": "error", "ename": name, "evalue": value}
                        outputs.append(Map({**output, "traceback": []}))
                    return
            raise KeyError(cell_id)

        self.room.change(write)

    def close(self) -> None:
        self.room.close()
