"""Every XSD a site names reads the same directories besides its own: the site's folder and its
``[schemas] paths`` (one function, ``site_schema_roots``). The XML envelope wrapper of an adapter
and the mapping of a route's transform step included: their XSDs import a schema kept in a
``[schemas] paths`` directory outside the site's folder, and the site loads
(``coupler daemon --check``); a directory that is no root stays refused, in one line naming the
file and how to add a root."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import make_daemon, write_site

XS = "http://www.w3.org/2001/XMLSchema"
MAPPING_DATA = Path(__file__).resolve().parents[2] / "translators" / "mapping" / "data"


def _shared(directory: Path) -> Path:
    """A schema directory outside the site's folder: the envelope's header and the accounts feed."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "header.xsd").write_text(f'''<?xml version="1.0"?>
<xs:schema xmlns:xs="{XS}" targetNamespace="urn:h109:hdr" elementFormDefault="qualified">
  <xs:element name="Header"><xs:complexType><xs:sequence>
    <xs:element name="CorrelationId" type="xs:string" minOccurs="0"/></xs:sequence></xs:complexType></xs:element>
</xs:schema>
''')
    shutil.copy(MAPPING_DATA / "accounts.xsd", directory / "accounts.xsd")
    return directory


def _avro(directory: Path) -> Path:
    """The canonical schemas (demo.Account) in a directory of their own."""
    shutil.copytree(MAPPING_DATA / "schemas", directory)
    return directory


def _envelope(site: Path) -> None:
    (site / "envelope").mkdir(parents=True, exist_ok=True)
    (site / "envelope" / "message.xsd").write_text(f'''<?xml version="1.0"?>
<xs:schema xmlns:xs="{XS}" xmlns:h="urn:h109:hdr" targetNamespace="urn:h109:env" elementFormDefault="qualified">
  <xs:import namespace="urn:h109:hdr" schemaLocation="../../h109_shared/header.xsd"/>
  <xs:element name="Message"><xs:complexType><xs:sequence>
    <xs:element ref="h:Header"/>
    <xs:element name="Data" type="xs:base64Binary"/>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>
''')


def _mapping(site: Path) -> None:
    (site / "mappings" / "xsd").mkdir(parents=True, exist_ok=True)
    (site / "mappings" / "xsd" / "accounts.xsd").write_text(
        f'<xs:schema xmlns:xs="{XS}">\n  <xs:include schemaLocation="../../../h109_shared/accounts.xsd"/>\n</xs:schema>\n')
    text = (MAPPING_DATA / "account-xml.toml").read_text().replace('"xml:accounts.xsd@', '"xml:xsd/accounts.xsd@')
    (site / "mappings" / "account.toml").write_text(text)


WRAPPERS = """
[[adapters]]
name = "h109-in"
type = "filedrop"
direction = "inbound"
channel = "h109.in"
[adapters.options]
directory = "drop"
[[adapters.wrappers]]
type = "xml"
options = { xsd = "envelope/message.xsd", element = "Message", payload = "Data", correlation_id = "Header.CorrelationId" }

[[adapters]]
name = "h109-out"
type = "filedrop"
direction = "outbound"
channel = "h109.out"
[adapters.options]
directory = "out"
[[adapters.wrappers]]
type = "xml"
options = { xsd = "envelope/message.xsd", element = "Message", payload = "Data", correlation_id = "Header.CorrelationId" }
"""

TRANSFORMS = """
[[routes]]
name = "h109-accounts"
from = "h109.feed"
to = ["h109.accounts"]
[[routes.steps]]
type = "transform"
mapping = "mappings/account.toml"
direction = "to_canonical"

[[routes]]
name = "h109-feed"
from = "h109.accounts"
to = ["h109.feed.out"]
[[routes.steps]]
type = "transform"
mapping = "mappings/account.toml"
direction = "to_legacy"
translator = "xml"
"""


def _site(tmp_path: Path, paths: list[str], body: str) -> Path:
    site = tmp_path / "h109_site"
    _envelope(site)
    _mapping(site)
    _shared(tmp_path / "h109_shared")
    _avro(tmp_path / "h109_avro")
    schemas = "[schemas]\npaths = [" + ", ".join(f'"{p}"' for p in paths) + "]\n"
    return write_site(site, '[site]\ndata_dir = "data"\n' + schemas + body)


def test_an_envelope_wrapper_xsd_reads_the_sites_schema_directories(tmp_path: Path) -> None:
    site = _site(tmp_path, ["../h109_avro", "../h109_shared"], WRAPPERS)
    assert make_daemon(site, plugins=None).check() == {}


def test_a_transform_steps_mapping_xsd_reads_the_sites_schema_directories(tmp_path: Path) -> None:
    site = _site(tmp_path, ["../h109_avro", "../h109_shared"], TRANSFORMS)
    assert make_daemon(site, plugins=None).check() == {}


@pytest.mark.parametrize("body", [WRAPPERS, TRANSFORMS], ids=["wrapper", "transform"])
def test_a_schema_directory_that_is_no_root_stays_refused_in_one_line(tmp_path: Path, body: str) -> None:
    site = _site(tmp_path, ["../h109_avro"], body)
    with pytest.raises(ConfigError) as info:
        make_daemon(site, plugins=None).check()
    text = str(info.value)
    assert "\n" not in text and "outside the directories" in text and "it was not opened" in text
    assert str((tmp_path / "h109_shared").resolve()) in text  # the file it would read
    assert "[schemas] paths" in text  # how to add a root in a site


BATCH = """
[[adapters]]
name = "h114-in"
type = "filedrop"
direction = "inbound"
channel = "h114.in"
[adapters.options]
directory = "drop"
batch_threshold_bytes = 100
batch_dir = "staged"

[[batch]]
source = "h114-in"
on_staged = true
"""
BATCH_MAPPING = 'from = "jsonl"\nmapping = "mappings/account.toml"\n'
BATCH_SOURCE = 'from = "xml:mappings/xsd/accounts.xsd#accounts"\n'
BATCH_BOTH = BATCH_SOURCE + 'mapping = "mappings/account.toml"\n'


@pytest.mark.parametrize("job", [BATCH_MAPPING, BATCH_SOURCE, BATCH_BOTH],
                         ids=["mapping", "xml-source", "both"])
def test_a_batch_jobs_mapping_and_xml_source_read_the_sites_schema_directories(tmp_path: Path, job: str) -> None:
    # `coupler daemon --check` loads what the job names as its run does (without Spark)
    site = _site(tmp_path, ["../h109_avro", "../h109_shared"], BATCH + job)
    assert make_daemon(site, plugins=None).check() == {}


@pytest.mark.parametrize(("job", "key"), [(BATCH_MAPPING, "mapping"), (BATCH_SOURCE, "from")],
                         ids=["mapping", "xml-source"])
def test_a_batch_jobs_schema_directory_that_is_no_root_is_refused_in_one_line(tmp_path: Path, job: str, key: str) -> None:
    site = _site(tmp_path, ["../h109_avro"], BATCH + job)
    with pytest.raises(ConfigError) as info:
        make_daemon(site, plugins=None).check()
    text = str(info.value)
    assert "\n" not in text and "outside the directories" in text and "it was not opened" in text
    assert f"batch[h114-in].{key}" in text  # the job's key in site.toml
    assert str((tmp_path / "h109_shared").resolve()) in text  # the file it would read
    assert "[schemas] paths" in text  # how to add a root in a site


def test_an_envelope_xsd_of_several_elements_names_the_wrappers_element_option(tmp_path: Path) -> None:
    # in a site the fix is the wrapper's `element` option (the command line's --element is no help)
    site = _site(tmp_path, ["../h109_avro", "../h109_shared"], WRAPPERS.replace('element = "Message", ', "", 1))
    (site.parent / "envelope" / "message.xsd").write_text(
        (site.parent / "envelope" / "message.xsd").read_text().replace(
            "</xs:schema>", '  <xs:element name="Ack" type="xs:string"/>\n</xs:schema>'))
    with pytest.raises(ConfigError) as info:
        make_daemon(site, plugins=None).check()
    text = str(info.value)
    assert "\n" not in text and "several global elements (Ack, Header, Message)" in text
    assert "adapters[h109-in].wrappers[0].options.element" in text  # the key to set
    assert 'element = "Ack"' in text and "--element" not in text


class _SparkStarted(Exception):
    """Raised where ingestion would start Spark's JVM: what the job loads was loaded."""


def _no_spark() -> None:
    raise _SparkStarted


@pytest.mark.parametrize(("paths", "refused"), [(["../h109_avro", "../h109_shared"], False), (["../h109_avro"], True)],
                         ids=["roots", "no-root"])
def test_a_batch_runs_mapping_and_xml_source_read_the_sites_schema_roots(tmp_path: Path, paths: list[str], refused: bool) -> None:
    # the run itself (`coupler batch ingest`, as the daemon starts it) loads them before Spark starts
    from coupler.bus.batch.ingest import ingest

    site = _site(tmp_path, paths, BATCH + BATCH_BOTH)
    (site.parent / "staged").mkdir()
    (site.parent / "staged" / "a.xml").write_text("<accounts/>")
    run = {"from_spec": f"xml:{site.parent / 'mappings/xsd/accounts.xsd'}#accounts",
           "mapping": str(site.parent / "mappings/account.toml"), "session": _no_spark}
    if not refused:
        with pytest.raises(_SparkStarted):
            ingest(site, "h114-in", **run)
        return
    with pytest.raises(CouplerError) as info:
        ingest(site, "h114-in", **run)
    text = str(info.value)
    assert "\n" not in text and "outside the directories" in text and "[schemas] paths" in text
    assert str((tmp_path / "h109_shared").resolve()) in text
