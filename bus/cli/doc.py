"""The CLI reference, generated from the parser itself so that it cannot drift.

``python -m coupler.bus.cli.doc > docs/cli-reference.md`` writes it; a test fails when the
file in the repository differs from what the code generates.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from coupler.bus.cli.main import build_parser

HEADER = """\
# CLI reference (generated)

Every command and option of `coupler`, generated from the code by
`python -m coupler.bus.cli.doc`; do not edit by hand. [cli.md](cli.md) explains how the
commands are used together.
"""


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, sub, helps.get(name) or ""


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            names = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs != 0 and action.metavar != argparse.SUPPRESS:
                names += f" `{action.metavar or action.dest.upper()}`"
        else:
            names = f"`{action.metavar or action.dest}`"
        text = action.help or ""
        if "%(" in text:  # as `--help` shows it: %(default)s and the like expanded
            text = parser._get_formatter()._expand_help(action)
        text = text.replace("|", "\\|").replace("\n", " ")
        if action.choices and not isinstance(action.choices, dict):
            text += f" (one of: {', '.join(map(str, action.choices))})"
        if (action.default not in (None, False, [], "", argparse.SUPPRESS) and action.option_strings
                and "default" not in text):  # said once: the help text may say it already
            text += f" (default: `{action.default}`)"
        rows.append(f"| {names} | {text.strip()} |")
    return rows


def _render(parser: argparse.ArgumentParser, path: list[str], level: int, out: list[str]) -> None:
    subs = list(_subcommands(parser))
    rows = _option_rows(parser)
    if path:
        out.append(f"{'#' * min(level, 6)} `{' '.join(path)}`\n")
        if parser.description:
            out.append(" ".join(parser.description.split()) + "\n")
        usage = " ".join(parser.format_usage().replace("usage: ", "").split())
        out.append(f"```\n{usage}\n```\n")
        if parser.epilog:
            out.append("Examples:\n\n```\n" + "\n".join(
                line.strip() for line in parser.epilog.splitlines()[1:]) + "\n```\n")
    if rows:
        out.append("| argument | meaning |\n|---|---|")
        out.extend(rows)
        out.append("")
    for name, sub, help_text in subs:
        if help_text and not sub.description:
            sub.description = help_text
        _render(sub, [*path, name], level + 1, out)


def render() -> str:
    parser = build_parser()
    out = [HEADER]
    _render(parser, [], 1, out)
    return "\n".join(out).rstrip() + "\n"


def command_paths() -> list[str]:
    """Every command path (``coupler schema check``) the CLI has."""
    found: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for name, sub, _ in _subcommands(parser):
            found.append(" ".join(["coupler", *path, name]))
            walk(sub, [*path, name])

    walk(build_parser(), [])
    return found


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
