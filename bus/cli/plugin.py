"""``coupler plugin new NAME [--kind adapter|step]``: a new plugin package to start from (like
``camel init`` or a cookiecutter).

With ``--kind step`` it writes a step type of route pipelines instead (``coupler_step_types``: a
step setting a property, its tests with :func:`coupler.bus.api.try_step`), from the templates of
``bus/cli/plugin_template/step/``.

It writes an installable distribution (``pyproject.toml`` with the ``coupler`` entry point),
an outbound adapter whose ``deliver()`` writes each document to a file in its ``directory``
option (declared options with an ``options_model``, ``path_options``, ``health()``, a
``file_mode`` option), a README and tests that run the adapter without a daemon
(:mod:`coupler.bus.testing`). The templates are the ``*.tmpl`` files of
``bus/cli/plugin_template/``.
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from pathlib import Path
from string import Template

from coupler.canonical.errors import CouplerError

#: an adapter type name: what ``type = "..."`` in site.toml says, and the entry point's name
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

#: template file -> path in the new project (``{package}`` is the import package), by kind
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "init.py.tmpl": "{package}/__init__.py",
    "adapter.py.tmpl": "{package}/adapter.py",
    "test_adapter.py.tmpl": "tests/test_adapter.py",
}
STEP_FILES = {
    "step/pyproject.toml.tmpl": "pyproject.toml",
    "step/README.md.tmpl": "README.md",
    "step/init.py.tmpl": "{package}/__init__.py",
    "step/step.py.tmpl": "{package}/step.py",
    "step/test_step.py.tmpl": "tests/test_step.py",
}


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("plugin", help="write a new adapter or step type plugin package")
    plugin_sub = group.add_subparsers(dest="plugin_command", metavar="COMMAND", required=True)
    p = plugin_sub.add_parser(
        "new",
        help="write an installable, tested adapter package (an outbound adapter writing files) to start from",
        description="Write an installable adapter plugin package: pyproject.toml with the `coupler` "
        "entry point, an outbound adapter whose deliver() writes each document to a file (declared, "
        "validated options; health(); a file_mode option), a README and tests that run it without a "
        "daemon. Then: `pip install -e DIR`, `pytest` in DIR, and `type = \"NAME\"` in a site.toml.",
    )
    p.add_argument("name", metavar="NAME",
                   help="the adapter or step type (lowercase words joined by '-', e.g. acme-notes): "
                        "site.toml's `type`, the distribution coupler-NAME, the package coupler_NAME")
    p.add_argument("--kind", choices=("adapter", "step"), default="adapter",
                   help="adapter (default) or step: a step type of route pipelines ([[routes.steps]] type)")
    p.add_argument("--directory", metavar="DIR",
                   help="where to write the package (default: ./coupler-NAME); must not exist or be empty")
    p.set_defaults(func=run_new)


def names(name: str) -> dict[str, str]:
    """The names a plugin called ``name`` uses (template placeholders)."""
    if not NAME_RE.match(name):
        raise CouplerError(
            f"{name!r} is not a plugin type name",
            hint="use lowercase letters and digits, words joined by '-' (e.g. acme-notes)",
        )
    words = name.split("-")
    return {
        "type": name,
        "distribution": f"coupler-{name}",
        "package": "coupler_" + "_".join(words),
        "classname": "".join(w.capitalize() for w in words),
    }


def render(name: str, kind: str = "adapter") -> dict[str, str]:
    """Every file of the new package: relative path -> text."""
    values = names(name)
    folder = resources.files("coupler.bus.cli") / "plugin_template"
    out: dict[str, str] = {}
    for template, target in (STEP_FILES if kind == "step" else FILES).items():
        text = folder.joinpath(*template.split("/")).read_text(encoding="utf-8")
        out[target.format(package=values["package"])] = Template(text).substitute(values)
    return out


def run_new(args: argparse.Namespace) -> int:
    files = render(args.name, args.kind)
    root = Path(args.directory or f"coupler-{args.name}")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise CouplerError(f"{root} already exists and is not an empty directory",
                           hint="name a new directory with --directory")
    from coupler.bus.cli.outputs import output_directory

    with output_directory(root, option="--directory"):  # a failure (a full disk) leaves no half package
        try:
            for relative, text in files.items():
                path = root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CouplerError(f"cannot write the plugin package: {exc.strerror}; nothing was kept",
                               where=str(exc.filename or root)) from None
    values = names(args.name)
    print(f"wrote {root}/ ({args.kind} type {args.name!r}, package {values['package']}):")
    for relative in files:
        print(f"  {relative}")
    print("next:")
    print(f"  pip install -e {root}        # then `coupler plugins` lists {args.name!r}")
    print(f"  (cd {root} && python -m pytest)  # its tests run the {args.kind} without a daemon")
    return 0
