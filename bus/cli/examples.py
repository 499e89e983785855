"""One or two examples for every ``coupler`` command, shown at the end of its ``--help`` and
in the generated CLI reference (like git's and Camel JBang's help).

A test parses every example with the real parser, so an example cannot name an option that
does not exist.
"""

from __future__ import annotations

import argparse

#: command path (without ``coupler``) -> ``(what it does, the command line)``
EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "": [
        ("start a site and run it", "coupler init mysite && coupler daemon --site mysite/site.toml"),
        ("what a copybook looks like as records", "coupler copybook decode CUSTOMER.cpy CUSTOMER.dat -o encoding=ebcdic"),
    ],
    "schema list": [("every canonical schema and its versions", "coupler schema list")],
    "schema show": [("one version of a schema", "coupler schema show acme.AddressChange@2")],
    "schema check": [
        ("is a new version backward compatible?",
         "coupler schema check --subject acme.AddressChange --mode backward v3.avsc"),
    ],
    "schema convert": [
        ("read a v2 record as v1", "coupler schema convert --from acme.AddressChange@2 --to acme.AddressChange@1 change.json"),
    ],
    "plugins": [("installed plugins and what they add", "coupler plugins --json")],
    "plugin new": [
        ("an installable, tested outbound adapter package to start from",
         "coupler plugin new acme-notes --directory ./coupler-acme-notes"),
    ],
    "xsd schema": [("the Avro schema of an XSD's root element", "coupler xsd schema invoice.xsd --element Invoice --json")],
    "xml decode": [
        ("XML documents to JSON lines", "coupler xml decode invoice.xsd inv-1.xml inv-2.xml --output invoices.jsonl"),
        ("one record per repeated element, as Avro", "coupler xml decode orders.xsd orders.xml --record-path /orders/order --to avro --output orders.avro"),
    ],
    "xml encode": [("JSON lines back to XML", "coupler xml encode invoice.xsd invoices.jsonl --output out.xml"),
                   ("the Avro file of `xml decode --to avro` back to XML", "coupler xml encode orders.xsd orders.avro --record-path /orders/order --output orders.xml")],
    "wsdl describe": [("services, ports and operations of a WSDL", "coupler wsdl describe checkVatService.wsdl")],
    "init": [("a new site in ./mysite", "coupler init mysite --name acme-claims")],
    "daemon": [("run a site (Ctrl-C or `coupler ctl stop` ends it)", "coupler daemon --site mysite/site.toml --log-format json"),
               ("exit 3 when an adapter does not start (a monitoring check)", "coupler daemon --site mysite/site.toml --check")],
    "ctl status": [("adapters, channels and alerts of a running site", "coupler ctl --site mysite/site.toml status")],
    "ctl channels": [("depth and counters per channel", "coupler ctl --site mysite/site.toml channels --json")],
    "ctl adapters": [("state, health and counters per adapter", "coupler ctl --site mysite/site.toml adapters")],
    "ctl identities": [("registered application identities", "coupler ctl --site mysite/site.toml identities")],
    "ctl dlq list": [("the invalid messages of one channel", "coupler ctl --site mysite/site.toml dlq list --queue orders --kind invalid")],
    "ctl dlq show": [("one dead letter with its error", "coupler ctl --site mysite/site.toml dlq show 42")],
    "ctl dlq replay": [("send a dead letter to a repair channel", "coupler ctl --site mysite/site.toml dlq replay 42 --to repair")],
    "ctl dlq purge": [("forget the dead letters of a channel", "coupler ctl --site mysite/site.toml dlq purge --queue orders")],
    "ctl pause": [("stop an adapter taking work", "coupler ctl --site mysite/site.toml pause sftp-in")],
    "ctl resume": [("let it take work again", "coupler ctl --site mysite/site.toml resume sftp-in")],
    "ctl ping": [("a Test Message through an adapter", "coupler ctl --site mysite/site.toml ping billing --timeout 10")],
    "ctl stop": [("drain and stop the daemon", "coupler ctl --site mysite/site.toml stop")],
    "ctl trace": [("every hop of a message and what was derived from it", "coupler ctl --site mysite/site.toml trace 0b7e3c52-8f7d-4d43-9a37-2d1f4b7c9e10"),
                  ("the messages of one file", "coupler ctl --site mysite/site.toml trace ORDERS.DAT")],
    "ctl groups": [("what the aggregators hold, and how old it is", "coupler ctl --site mysite/site.toml groups list")],
    "ctl groups list": [("the open groups of one route", "coupler ctl --site mysite/site.toml groups list --route orders")],
    "ctl groups complete": [("send a group's batch now", "coupler ctl --site mysite/site.toml groups complete orders by-region EU")],
    "ctl groups discard": [("drop a group and what it holds", "coupler ctl --site mysite/site.toml groups discard orders by-region EU")],
    "ctl routes": [("every route pipeline with its steps and detour switches", "coupler ctl --site mysite/site.toml routes")],
    "ctl detour": [("send a route's messages through its Detour steps", "coupler ctl --site mysite/site.toml detour orders on"),
                   ("back to the main path", "coupler ctl --site mysite/site.toml detour orders off")],
    "ctl test": [("what each step of a route does with a file (nothing is delivered)",
                  "coupler ctl --site mysite/site.toml test orders --file order.json --format shop.Order@1;application/json")],
    "ctl console": [("the console's URL with its token (keep it private)", "coupler ctl --site mysite/site.toml console")],
    "store backup": [("an online backup of the data directory", "coupler store backup --site mysite/site.toml /backups/mysite-today")],
    "channel put": [
        ("one message per file", "coupler channel put --site mysite/site.toml orders order-1.json order-2.json"),
        ("one message per line of standard input",
         "cat addresses.jsonl | coupler channel put --site mysite/site.toml addresses --lines --format 'acme.Address@1;application/json'"),
    ],
    "channel get": [("take up to 10 messages, waiting 5 s for the first", "coupler channel get --site mysite/site.toml orders --max 10 --wait 5 --json")],
    "channel purge": [("empty a channel", "coupler channel purge --site mysite/site.toml scratch")],
    "send": [
        ("deliver a document through the adapters serving a target",
         "coupler send --site mysite/site.toml --command send --target policies change.avro --format acme.AddressChange@2"),
        ("what an adapter can do", "coupler send --site mysite/site.toml --command describe --target billing --json"),
    ],
    "copybook layout": [("offsets and lengths of every field", "coupler copybook layout CUSTOMER.cpy --json")],
    "copybook schema": [("the Avro schema of a copybook", "coupler copybook schema CUSTOMER.cpy --name Customer --namespace acme")],
    "copybook decode": [
        ("an EBCDIC file of fixed-length records to JSON lines",
         "coupler copybook decode CUSTOMER.cpy CUSTOMER.dat -o encoding=ebcdic --output customers.jsonl"),
        ("a variable-length (RDW) file to Parquet",
         "coupler copybook decode CUSTOMER.cpy CUSTOMER.vb -o record_format=V --to parquet --output customers.parquet"),
    ],
    "copybook family": [("records of several layouts in one file", "coupler copybook family family.toml MIXED.dat --output mixed.jsonl")],
    "copybook encode": [("JSON lines back to fixed-width records", "coupler copybook encode CUSTOMER.cpy customers.jsonl --output CUSTOMER.dat")],
    "batch translate": [
        ("a large copybook file to Parquet on Spark",
         "coupler batch translate --from copybook:CUSTOMER.cpy --to parquet --output out/ CUSTOMER.dat --master 'local[2]'"),
    ],
    "batch ingest": [("what an adapter staged for batch", "coupler batch ingest --site mysite/site.toml --source life-nightly --to parquet --output nightly/")],
    "translate": [
        ("a copybook file to canonical Avro through a mapping",
         "coupler translate --from copybook:CUSTOMER.cpy --to avro:acme.Customer@2 --map customer.toml --output customers.avro CUSTOMER.dat"),
        ("XML to JSON lines", "coupler translate --from xml:invoice.xsd --to jsonl --output invoices.jsonl invoice.xml"),
    ],
}


def epilog(path: str) -> str | None:
    """The ``examples:`` block of the command at ``path`` (``""`` for ``coupler`` itself); a
    command group shows the first example of each of its commands."""
    examples = EXAMPLES.get(path) or [
        found[0] for sub, found in EXAMPLES.items()
        if path and sub.startswith(path + " ") and sub.count(" ") == path.count(" ") + 1
    ]
    if not examples:
        return None
    lines = ["examples:"]
    for what, command in examples:
        lines += [f"  # {what}", f"  {command}"]
    return "\n".join(lines)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, but the examples block is printed as written (not re-wrapped)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def attach(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Give ``parser`` and every subcommand below it its examples."""
    text = epilog(path)
    if text:
        parser.epilog = text
        if parser.formatter_class is argparse.HelpFormatter:
            parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                attach(sub, f"{path} {name}".strip())
