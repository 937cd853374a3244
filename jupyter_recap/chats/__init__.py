"""Jupyter AI chats: their turns read from the chat document (:mod:`.document`), as a
transcript the recap pipeline reads (:mod:`.recap`), and what a chat's agent did in the
notebooks it worked on (:mod:`.notebooks`). Pure: the server extension and the CLI feed them."""
