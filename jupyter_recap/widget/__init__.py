"""The recap banner: an anywidget whose front end (``static/``) needs no build step."""
