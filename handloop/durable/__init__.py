"""Runs on Temporal: the workflow, the worker, the client. The only modules that import temporalio; nothing
imports this package but the command line's Temporal side, lazily."""
