"""site.toml loading and validation: defaults, typed values, errors naming the key path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site, parse_site

MINIMAL = ""

FULL = """
[site]
name = "acme"
data_dir = "var"

[store]
synchronous = "NORMAL"
lease_seconds = 5
[store.redelivery]
max_attempts = 3

[schemas]
paths = ["schemas"]

[[channels]]
name = "orders"
kind = "topic"
format = "acme.Order"

[[adapters]]
name = "orders-in"
type = "echo"
direction = "inbound"
channel = "orders"
targets = ["orders"]
identity = { class = "orders", provider = "acme" }
format = "acme.Order@2"
[adapters.options]
directory = "/srv/drop"
nested = { a = 1 }

[[routes]]
from = "orders"
otherwise = "orders.other"
[[routes.rules]]
when = "properties.region = 'EU'"
to = ["orders.eu", "orders.audit"]
[[routes.rules]]
to = ["orders.rest"]
"""


def test_empty_site_gets_every_default(tmp_path: Path) -> None:
    site = parse_site(MINIMAL, tmp_path / "site.toml")
    assert site.name == "coupler-site"
    assert site.data_dir == tmp_path / "data"
    assert site.store.synchronous == "FULL"
    assert site.store.redelivery.max_attempts == 5
    assert site.control_socket == tmp_path / "data" / "control.sock"
    assert site.store_path == tmp_path / "data" / "coupler.db"
    assert site.adapters == [] and site.routes == [] and site.channels == []
    assert site.command_channel == "coupler.commands"


def test_full_site_is_typed(tmp_path: Path) -> None:
    site = parse_site(FULL, tmp_path / "site.toml")
    assert site.data_dir == tmp_path / "var"
    assert site.store.lease_seconds == 5.0 and isinstance(site.store.lease_seconds, float)
    assert site.store.redelivery.max_attempts == 3
    assert site.store.redelivery.multiplier == 2.0
    assert site.schema_paths == [tmp_path / "schemas"]
    (ad,) = site.adapters
    assert ad.name == "orders-in" and ad.targets == ("orders",)
    assert ad.identity_dict == {"class": "orders", "provider": "acme", "name": "", "version": ""}
    assert ad.options == {"directory": "/srv/drop", "nested": {"a": 1}}
    assert ad.enabled is True and ad.key_path == "adapters[orders-in]" and ad.index == 0
    (rt,) = site.routes
    assert rt.name == "route-0" and rt.source == "orders" and rt.otherwise == "orders.other"
    assert [r.to for r in rt.rules] == [("orders.eu", "orders.audit"), ("orders.rest",)]
    assert site.channel("orders").kind == "topic"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[store]\nsynchronous = "OFF"\n', "store.synchronous: 'OFF' is not one of FULL, NORMAL"),
        ("[store]\nlease_seconds = \"10\"\n", "store.lease_seconds: expected a number, got a string ('10')"),
        ("[store]\nlease_seconds = -1\n", "store.lease_seconds: -1 is less than the minimum"),
        # TOML's inf and nan: a lease that never ends, a bound nan is never below
        ("[store]\nlease_seconds = inf\n", "store.lease_seconds: inf is not a finite number"),
        ("[site]\ndrain_timeout_seconds = nan\n", "site.drain_timeout_seconds: nan is not a finite number"),
        ("[store.redelivery]\nmax_attempts = 1.5\n", "store.redelivery.max_attempts: expected an integer"),
        ("[stor]\n", "stor: unknown key (did you mean 'store'?)"),
        ('[[adapters]]\nname = "a"\n', "adapters[a].type: required key is missing"),
        ('[[adapters]]\nname = "a"\ntype = "t"\ndirection = "in"\n', "adapters[a].direction: 'in' is not one of inbound, outbound, both"),
        ('[[adapters]]\nname = "a"\ntype = "t"\ntargets = "x"\n', "adapters[a].targets: expected an array of strings"),
        ('[[adapters]]\nname = "a"\ntype = "t"\nformat = "acme.Order"\n', "adapters[a].format: malformed format indicator"),
        ('[[adapters]]\nname = "a"\ntype = "t"\ncommands = ["sned"]\n', "adapters[a].commands[0]: 'sned' is not one of"),
        ('[[adapters]]\nname = "a"\ntype = "t"\nidentity = { provider = "x" }\n', "adapters[a].identity.class: required key is missing"),
        ('[[adapters]]\nname = "a"\ntype = "t"\n[[adapters]]\nname = "a"\ntype = "u"\n', "adapters[1].name: 'a' is already used by adapters[0]"),
        ('[[routes]]\nfrom = "in"\n', "routes[0]: goes nowhere: give it `to` channels, `rules` or `steps`"),
        ('[[routes]]\nfrom = "in"\n[[routes.rules]]\nwhen = "region = "\nto = ["x"]\n', "routes[0].rules[0].when:"),
        ('[[routes]]\nfrom = "in"\n[[routes.rules]]\nto = ["in"]\n', "routes[0].rules[0].to[0]: 'in' is the route's own input channel"),
        ('[[routes]]\nfrom = "in"\n[[routes.rules]]\nto = ["a"]\n[[routes.rules]]\nwhen = "properties.x = 1"\nto = ["b"]\n', "routes[0].rules[0]: has no `when`"),
        ('[[routes]]\nfrom = "in"\n[[routes.rules]]\nto = []\n', "routes[0].rules[0].to: needs at least one channel"),
        ('[[routes]]\nfrom = "in"\n[[routes.rules]]\nto = ["a"]\n[[routes]]\nfrom = "in"\n[[routes.rules]]\nto = ["b"]\n', "routes[1].from: channel 'in' is already routed by routes[0]"),
        ('[[channels]]\nname = "bad name"\n', "channels[0].name: 'bad name' is not a valid channel name"),
        ('[[channels]]\nname = "c"\nformat = "acme.Order@1"\n', "channels[c].format: 'acme.Order@1' is not a canonical format name"),
        ("adapters = 3\n", "adapters: expected an array of tables"),
        ("[store.redelivery]\ninitial_delay = 10\nmax_delay = 5\n", "store.redelivery: max_delay 5.0 is below initial_delay 10.0"),
        ("[store.redelivery]\njitter = 1.5\n", "store.redelivery: jitter must be in [0, 1), got 1.5"),
    ],
)
def test_errors_name_the_key_path(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_site(text, tmp_path / "site.toml")
    message = str(info.value)
    assert re.match(rf"{re.escape(str(tmp_path / 'site.toml'))}:\d+: ", message), message
    assert expected in message


def test_all_problems_are_reported_together(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse_site('[store]\nsynchronous = "OFF"\n[logging]\nlevel = "LOUD"\n', tmp_path / "site.toml")
    assert len(info.value.problems) == 2
    assert "2 problems" in str(info.value)
    assert any(p.startswith("logging.level:") for p in info.value.problems)


def test_toml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "site.toml"
    path.write_text('[site]\nname = "x"\ndata_dir = \n')
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert str(info.value).startswith(f"{path}:3:")
    assert "not valid TOML" in str(info.value)


@pytest.mark.parametrize("value", ["[" * 2000 + "]" * 2000, "{a = " * 1000 + "1" + " }" * 1000])
def test_arrays_nested_too_deep_for_toml_are_refused_in_one_line(tmp_path: Path, value: str) -> None:
    """tomllib reads nested arrays and inline tables by recursion, with no limit of its own:
    a site file nesting them a thousand deep ended the load with a RecursionError."""
    path = tmp_path / "site.toml"
    path.write_text(f'[site]\nname = "x"\nextra = {value}\n')
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert str(info.value) == f"{path}: TOML nested too deeply (arrays or inline tables inside each other hundreds of times)"


def test_missing_site_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="coupler init"):
        load_site(tmp_path / "nope.toml")


def test_problems_give_the_line_and_the_key_path(tmp_path: Path) -> None:
    path = tmp_path / "site.toml"
    path.write_text('[site]\nname = "x"\n\n[[adapters]]\nname = "in"\ntype = "t"\n\n[[adapters]]\nname = "out"\n'
                    'type = "t"\ndirection = "out"\n[adapters.options]\nport = 1\n[[routes]]\nfrom = "a"\n'
                    '[[routes.rules]]\nto = ["a"]\n')
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert info.value.problems == [
        "adapters[out].direction: 'out' is not one of inbound, outbound, both",
        "routes[0].rules[0].to[0]: 'a' is the route's own input channel (a loop)",
    ]
    assert info.value.lines == [11, 17]
    assert str(info.value) == (f"{path}: 2 problems: line 11: adapters[out].direction: 'out' is not one of inbound, "
                               "outbound, both; line 17: routes[0].rules[0].to[0]: 'a' is the route's own input "
                               "channel (a loop)")


def test_adapter_options_are_checked_on_load_with_the_other_problems(tmp_path: Path) -> None:
    from coupler.bus.plugins.manager import plugin_manager

    path = tmp_path / "site.toml"
    path.write_text('[store]\nsynchronous = "OFF"\n\n[[adapters]]\nname = "hl7-in"\ntype = "socket"\n'
                    '[adapters.options]\nmode = "server"\nport = 2575\nidle_timout = 5\n[adapters.options.tls]\n'
                    'cer = "x.pem"\n\n[[adapters]]\nname = "soap-in"\ntype = "sopa"\n')
    with pytest.raises(ConfigError) as info:
        load_site(path, pm=plugin_manager())
    assert info.value.problems == [
        "store.synchronous: 'OFF' is not one of FULL, NORMAL",
        "adapters[hl7-in].options.idle_timout: unknown key (did you mean 'idle_timeout'?)",
        "adapters[hl7-in].options.tls.cer: unknown key (did you mean 'cert'?)",
        "adapters[soap-in].type: no installed plugin provides adapter type 'sopa' (did you mean 'soap'? installed: "
        "amqp, database, filedrop, http, sftp, soap, socket; `coupler plugins` lists them)",
    ]
    assert info.value.lines == [2, 10, 12, 16]
    path.write_text(path.read_text().replace('"OFF"', '"FULL"').replace("idle_timout", "idle_timeout")
                    .replace("cer =", "cert =").replace('"sopa"', '"socket"\noptions = { mode = "client", port = 1 }'))
    site = load_site(path, pm=plugin_manager())
    assert [a.name for a in site.adapters] == ["hl7-in", "soap-in"]
