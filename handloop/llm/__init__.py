"""The model plumbing below model.py: replies read into the project's terms, streamed replies assembled, and the
loopback OpenAI-compatible endpoint that serves an offline model through the real client."""
