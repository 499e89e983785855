"""``coupler plugin new NAME``: a new adapter plugin package to start from (like ``camel init``
or a cookiecutter).

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

#: template file -> path in the new project (``{package}`` is the import package)
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "init.py.tmpl": "{package}/__init__.py",
    "adapter.py.tmpl": "{package}/adapter.py",
    "test_adapter.py.tmpl": "tests/test_adapter.py",
}


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("plugin", help="write a new adapter plugin package")
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
                   help="the adapter type (lowercase words joined by '-', e.g. acme-notes): "
                        "site.toml's `type`, the distribution coupler-NAME, the package coupler_NAME")
    p.add_argument("--directory", metavar="DIR",
                   help="where to write the package (default: ./coupler-NAME); must not exist or be empty")
    p.set_defaults(func=run_new)


def names(name: str) -> dict[str, str]:
    """The names a plugin called ``name`` uses (template placeholders)."""
    if not NAME_RE.match(name):
        raise CouplerError(
            f"{name!r} is not an adapter type name",
            hint="use lowercase letters and digits, words joined by '-' (e.g. acme-notes)",
        )
    words = name.split("-")
    return {
        "type": name,
        "distribution": f"coupler-{name}",
        "package": "coupler_" + "_".join(words),
        "classname": "".join(w.capitalize() for w in words),
    }


def render(name: str) -> dict[str, str]:
    """Every file of the new package: relative path -> text."""
    values = names(name)
    folder = resources.files("coupler.bus.cli") / "plugin_template"
    out: dict[str, str] = {}
    for template, target in FILES.items():
        text = (folder / template).read_text(encoding="utf-8")
        out[target.format(package=values["package"])] = Template(text).substitute(values)
    return out


def run_new(args: argparse.Namespace) -> int:
    files = render(args.name)
    root = Path(args.directory or f"coupler-{args.name}")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise CouplerError(f"{root} already exists and is not an empty directory",
                           hint="name a new directory with --directory")
    try:
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CouplerError(f"cannot write the plugin package: {exc.strerror}", where=str(exc.filename or root)) from None
    values = names(args.name)
    print(f"wrote {root}/ (adapter type {args.name!r}, package {values['package']}):")
    for relative in files:
        print(f"  {relative}")
    print("next:")
    print(f"  pip install -e {root}        # then `coupler plugins` lists {args.name!r}")
    print(f"  (cd {root} && python -m pytest)  # its tests run the adapter without a daemon")
    return 0
