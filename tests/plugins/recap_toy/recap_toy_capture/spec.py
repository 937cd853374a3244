"""The spec of the toy source: what the ``jupyter_recap.capture`` entry point points at."""

from jupyter_recap.capture.specs import CaptureSpec

SPEC = CaptureSpec(
    name="toy",
    modules=("toyagent",),
    source="recap_toy_capture.source:ToySource",
    # The number, not jupyter_recap's API_VERSION: the version this source was written for,
    # so that a jupyter_recap with another contract refuses it instead of running it.
    api_version=1,
)
