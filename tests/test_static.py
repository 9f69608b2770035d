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


def _imports(path, name, modules):
    """The package's modules that the module `name` (file `path`) imports, at its top or inside a function."""
    import ast
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return (found & set(modules)) - {name}


def test_no_import_circle_in_the_package():
    # imports point only downward (issue 48, finding 9): no module reaches itself through the modules it imports
    import os
    modules = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "handloop")):
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
                modules[name] = path
    graph = {name: _imports(path, name, modules) for name, path in modules.items()}
    circles = []
    for start in sorted(graph):
        seen, todo = set(), list(graph[start])
        while todo:
            module = todo.pop()
            if module == start:
                circles.append(start)
                break
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
    assert circles == []
