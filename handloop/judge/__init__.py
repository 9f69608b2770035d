"""The offline judge: transcripts of any system read (formats, readings, transcripts), the declaration they are
judged by, the rules checks.py applies (confirm, weather), their verdicts and texts. Imports nothing of the loop."""
