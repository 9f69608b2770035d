"""A run made visible: its timeline as the audit file records it (timeline.py), exported as OpenTelemetry
GenAI spans (settings.py reads whether the environment asks for it, send.py exports a stretch, otlp.py builds and sends the spans) with, on Temporal, the workflow's and its
activities' own spans (temporal.py; with otlp.py the only importers of opentelemetry), and drawn as one
self-contained HTML page (view.py).

Invariants: the spans of a run's turns, its page and its timeline are made from what the run recorded (its audit
snapshot), after the work was done; the loop knows nothing of it, and nothing here changes a run or its outcome
(temporal.py's interceptor traces Temporal's calls as they happen and leaves what they do and return as it was).
"""
