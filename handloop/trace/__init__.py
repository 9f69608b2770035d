"""A run made visible: its timeline as the audit file records it (timeline.py), exported as OpenTelemetry
GenAI spans (send.py decides whether, otlp.py builds and sends them: the only importer of opentelemetry) and
drawn as one self-contained HTML page (view.py).

Invariants: everything here reads what a run recorded (its audit snapshot), after the work was done; the loop
knows nothing of it, and nothing here changes a run or its outcome.
"""
