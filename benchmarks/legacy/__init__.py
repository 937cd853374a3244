"""The context builder and offline engine as they were before the session state (round 3),
frozen here so that ``bench_recap_quality.py`` measures them beside today's in the same run.
Benchmark code only: never imported by the package."""
