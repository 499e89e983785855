"""The console's JSON API validates its inputs (issue 29 item 6): the OpenAPI description it
publishes is fuzzed with schemathesis against a real daemon (positive and negative inputs:
no 500, every status and body as described, bad input refused with 400), and the published
copy ``docs/console-openapi.json`` is the one the daemon serves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.api import openapi
from coupler.bus.runtime.console.server import read_token
from coupler.bus.runtime.daemon import Daemon
from tests.bus.runtime.console.helpers import console_site
from tests.bus.runtime.console.test_http import _get
from tests.bus.site_helpers import REPO, running_daemon

DOC = REPO / "docs" / "console-openapi.json"

schema = schemathesis.openapi.from_dict(openapi())
# The token is this test's to give (every request carries it, below): were the security scheme's
# header generated too, a negative case "Authorization removed" would get it back from the
# test and the daemon's rightful 200 would read as "schema-violating request accepted".
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                                with_security_parameters=False)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, str]]:
    tmp_path = tmp_path_factory.mktemp("console-fuzz")
    site_file = console_site(tmp_path)
    with running_daemon(site_file, plugins=None) as daemon:
        assert daemon.transport is not None
        yield daemon, read_token(load_site(site_file))


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_console_api_fuzzed(case, console) -> None:  # type: ignore[no-untyped-def]
    daemon, token = console
    checks = [c for c in CHECKS.get_all() if c.__name__ in (
        "not_a_server_error", "status_code_conformance", "content_type_conformance",
        "response_schema_conformance", "negative_data_rejection")]
    case.call_and_validate(base_url=daemon.console_url, headers={"Authorization": f"Bearer {token}"},
                           checks=checks)


def test_bad_inputs_are_400_naming_the_parameter(console) -> None:  # type: ignore[no-untyped-def]
    daemon, token = console
    url = daemon.console_url
    for query, named in (("limit=abc", "limit"), ("limit=0", "limit"), ("kind=both", "kind"),
                         ("queue=../x", "queue"), ("limit=99999999999999999999", "limit")):
        status, body = _get(f"{url}/api/dead-letters?{query}", token)
        answer = json.loads(body)
        assert status == 400 and answer["problems"][0].startswith(named), (query, answer)
    status, body = _get(f"{url}/api/dead-letters/99999999999999999999", token)
    assert status == 400 and "out of range" in json.loads(body)["error"]
    assert _get(f"{url}/api/dead-letters?limit=5&kind=&queue=", token)[0] == 200  # empty form fields: not given


def test_the_published_description_is_the_served_one(console) -> None:  # type: ignore[no-untyped-def]
    daemon, token = console
    status, body = _get(f"{daemon.console_url}/api/openapi.json", token)
    assert status == 200
    served = json.loads(body)
    assert json.loads(DOC.read_text()) == served, (
        "docs/console-openapi.json is stale: regenerate it with "
        "`python -c 'import json; from coupler.bus.runtime.console.api import openapi; "
        "print(json.dumps(openapi(), indent=2))' > docs/console-openapi.json`")


def write_doc(path: Path = DOC) -> None:
    path.write_text(json.dumps(openapi(), indent=2) + "\n")
