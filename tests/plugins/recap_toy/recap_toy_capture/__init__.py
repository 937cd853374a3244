"""recap-toy: the sample capture plugin of jupyter_recap, for the toy framework ``toyagent``.

Two modules, as every capture plugin has: :mod:`.spec`, which the distribution's entry point
names (``[jupyter_recap.capture] toy = recap_toy_capture.spec:SPEC``) and which imports nothing
but the spec type, and :mod:`.source`, the source itself, which jupyter_recap imports only once
the person imported ``toyagent``. This package stays empty so that loading the spec costs
nothing more.
"""
