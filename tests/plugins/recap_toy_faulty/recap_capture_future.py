"""A capture plugin written for a later capture API: jupyter_recap must refuse it, saying why."""

from jupyter_recap.capture.specs import CaptureSpec

SPEC = CaptureSpec(
    name="future",
    modules=("toyagent",),
    source="recap_capture_future:FutureSource",
    api_version=2,
)
