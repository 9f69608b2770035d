"""The static checks CI runs, as tests (CI runs exactly the README's test command): no undefined name and
no unused import anywhere in the package, the tests and the bench (ruff's F rules, pyflakes'), and the type
checker over the package with function bodies checked (pyproject.toml's [tool.mypy]). Each fails with the
checker's own report."""
import subprocess
import sys

from conftest import ROOT


def checked(*command):
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_no_undefined_name_and_no_unused_import_in_the_package_the_tests_and_the_bench():
    done = checked("ruff", "check", "--select", "F", "--no-cache", "--output-format", "concise",
                   "handloop", "tests", "bench", "agent.py", "examples")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_type_checker_passes_on_the_package_with_function_bodies_checked():
    done = checked("mypy", "--check-untyped-defs", "--no-error-summary", "handloop")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
