"""The capture layer: agent runs started from plain cells become agent turns, with no wiring.

``runs`` is the part every source reports into (one turn per top-level run, nested runs as tool
lines, outcomes settled with the cell); ``sources`` is the base class and the post-import
hooks; ``specs`` says what each source is before its framework is imported (the
``jupyter_recap.capture`` entry points point at these specs); ``plugins`` finds the sources
other distributions register there; ``manager`` starts the sources ``Recap.capture`` selects.
Then one module per
framework, each importing its framework only once the person has imported it:
``openai_agents``, ``pydantic_ai``, ``langchain`` (LangChain and LangGraph), ``smolagents``,
``otel`` (OpenTelemetry GenAI spans of any instrumented library, via ``genai_tracker``, which
reads each span through ``genai_messages``) and ``jupyter_ai`` (its ``%ai`` line magic).
"""
