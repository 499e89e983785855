"""Fuzzing the mapping translator's record input: the legacy records of the account mapping
(``data/account-copybook.toml``) as an adapter hands them to the bus (a JSON body, or the
record's copybook bytes: ``LegacyReader.decode`` then ``Mapping.to_canonical``) and as a JSON
lines file ``coupler translate --from jsonl`` reads (``JsonlFormat`` through
``Translation.run`` into the copybook file of the mapping).

The inputs are the real record, damaged: values replaced by hostile ones (numbers with
exponents of a billion, 5000 digits, text of 100 kB, arrays and objects nested 50 000 deep,
wrong types), keys dropped, bytes flipped, inserted and cut, lines run together. One message
either gives a canonical record or raises :class:`CouplerError` in one line; one line of a
file is either written or reported with its line or record number, and the file goes on.
Nothing else escapes; each case is bounded in time (an interval timer) and memory
(tracemalloc's peak), by ``tests/fuzzing.py``. Bounded by ``COUPLER_FUZZ_SECONDS`` (3 s by default); the seed is
printed and ``COUPLER_FUZZ_SEED=N`` replays a run."""

from __future__ import annotations

import contextlib
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from coupler.canonical.errors import CouplerError
from coupler.canonical.registry import SchemaRegistry
from coupler.translators.copybook.decoder import parse_options
from coupler.translators.copybook.encoder import RecordEncoder
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_file
from coupler.translators.mapping import load_mapping
from coupler.translators.mapping.formats import parse_spec, record_format
from coupler.translators.mapping.jsonvalues import dumps
from coupler.translators.mapping.legacy import LegacyReader
from coupler.translators.mapping.translate import plan
from tests import fuzzing
from tests.fuzzing import BUDGET, MB, SEED
from tests.translators.mapping.test_legacy_reader import ACCOUNT

DATA = Path(__file__).parent / "data"
#: JSON values put where the record has one (text of JSON: numbers JSON reads as it will)
HOSTILE = ["1e999999999", "-1e-999999999", "1E+30", "9" * 5000, "-" + "9" * 40, "0.000000000000000000001",
           "1e18", "-0", "NaN", "Infinity", "true", "null", "[]", "{}", '""', '"' + "x" * 100_000 + '"',
           '"99999999-01-01"', '"2024-02-30"', '"\\ud800"', '"\\u0000"', '"A"', "[" * 50_000 + "]" * 50_000,
           '{"a":' * 50_000 + "1" + "}" * 50_000, "[1, [2, [3]]]", '{"SKU": 1}', '[{"QTY": 1e400}]']


@pytest.fixture(scope="module")
def setting() -> dict[str, Any]:
    registry = SchemaRegistry.from_dirs([DATA / "schemas"])
    mapping = load_mapping(DATA / "account-copybook.toml", registry=registry)
    legacy = mapping.to_legacy(ACCOUNT)
    spec = parse_spec(mapping.legacy_spec, base_dir=DATA, options=mapping.legacy_options)
    encoder = RecordEncoder(build_layout(parse_file(spec.path)), parse_options(spec.options))
    return {"registry": registry, "mapping": mapping, "reader": LegacyReader(mapping), "spec": spec,
            "json": dumps(legacy), "record": bytes(encoder.encode(legacy))}


def bounded(label: str) -> contextlib.AbstractContextManager[None]:
    """One case: at most 5 s and 64 MB more than its input (nothing allocated from a claimed
    size or depth); a hang in C (int() of a decimal of a billion digits) ends the run, with the
    Python stack of the case, after 6 periods (:func:`tests.fuzzing.bounded`)."""
    return fuzzing.bounded(label, memory=64 * MB, watchdog=True)


def damaged_json(rng: random.Random, text: str) -> str:
    """The record's JSON with one to three edits."""
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(6)
        if op <= 2:  # a value replaced (the common edit): after a key, or an item of LINES
            keys = [i for i in range(len(text)) if text.startswith('":', i)]
            if not keys:
                continue
            at = rng.choice(keys) + 2
            end = at
            depth = 0
            while end < len(text) and (depth or text[end] not in ",}]"):
                depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(text[end], 0)
                end += 1
            text = text[:at] + rng.choice(HOSTILE) + text[end:]
        elif op == 3:  # a key dropped or renamed (of JSON still whole enough to read here)
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if obj and isinstance(obj, dict):
                key = rng.choice(list(obj))
                value = obj.pop(key)
                if rng.random() < 0.5:
                    obj[key.lower()] = value
            text = json.dumps(obj)
        elif op == 4:  # a character flipped
            at = rng.randrange(len(text))
            text = text[:at] + chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x3000)])) + text[at + 1:]
        else:  # cut, or a piece repeated
            at, end = sorted(rng.randrange(len(text) + 1) for _ in range(2))
            text = text[:at] + (text[at:end] * rng.randrange(0, 3)) + text[end:]
    return text


def damaged_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 6)):
        op = rng.randrange(3)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif op == 1:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5)))
        else:
            del out[at:at + rng.randrange(1, 8)]
    return bytes(out)


def _message(setting: dict[str, Any], body: bytes, content_type: str, label: str) -> str:
    """One message through the bus's translation stage: "mapped" or "refused"."""
    with bounded(label):
        try:
            legacy = setting["reader"].decode(body, content_type, label=label)
            setting["mapping"].to_canonical(legacy)
        except CouplerError as exc:
            assert str(exc).strip() and "\n" not in str(exc), f"{label}: {exc!r}"
            return "refused"
    return "mapped"


def test_damaged_json_and_copybook_messages_are_mapped_or_refused_in_one_line(setting: dict[str, Any]) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    deadline, count, seen = time.monotonic() + BUDGET, 0, {"mapped": 0, "refused": 0}
    while time.monotonic() < deadline:
        count += 1
        if rng.random() < 0.7:
            body, content_type = damaged_json(rng, setting["json"]).encode("utf-8", "surrogatepass"), "application/json"
        else:
            body, content_type = damaged_bytes(rng, setting["record"]), "application/x-cobol-record"
        label = f"message {count} (COUPLER_FUZZ_SEED={SEED})"
        try:
            seen[_message(setting, body, content_type, label)] += 1
        except Exception as exc:  # noqa: BLE001 - the finding, with the body that caused it
            pytest.fail(f"{label}: {type(exc).__name__}: {str(exc)[:200]}; body {body[:300]!r}")
    assert seen["mapped"] and seen["refused"], seen


def _translate(setting: dict[str, Any], tmp_path: Path, lines: list[bytes], label: str) -> tuple[int, list[tuple[int, str]]]:
    """A JSON lines file into the mapping's copybook file: (records written, errors reported)."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    errors: list[tuple[int, str]] = []
    with bounded(label):
        translation = plan(record_format(parse_spec("jsonl")),
                           record_format(setting["spec"], registry=setting["registry"]),
                           [setting["mapping"]], registry=setting["registry"])
        summary = translation.run(source, tmp_path / "out.dat", lambda n, e: errors.append((n, str(e))))
    return summary.written, errors


def test_damaged_json_lines_files_are_translated_line_by_line(setting: dict[str, Any], tmp_path: Path) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    canonical = dumps(ACCOUNT)
    deadline, count, written, reported = time.monotonic() + BUDGET, 0, 0, 0
    while time.monotonic() < deadline:
        count += 1
        lines = [(damaged_json(rng, canonical) if rng.random() < 0.6 else canonical).encode("utf-8", "surrogatepass")
                 for _ in range(rng.randrange(1, 6))]
        label = f"file {count} (COUPLER_FUZZ_SEED={SEED})"
        try:
            n, errors = _translate(setting, tmp_path, lines, label)
        except Exception as exc:  # noqa: BLE001 - the finding, with the lines that caused it
            pytest.fail(f"{label}: {type(exc).__name__}: {str(exc)[:200]}; lines {[x[:200] for x in lines]}")
        assert n + len(errors) == len([x for x in lines if x.strip()]), f"{label}: {n} written, {errors}"
        for number, text in errors:
            assert 1 <= number <= len(lines) and text.strip() and "\n" not in text, f"{label}: {number} {text!r}"
        written += n
        reported += len(errors)
    assert written and reported, (written, reported)


# -- what the fuzz tests found, as the exact inputs -------------------------------------------


def test_a_json_message_nested_deeply_is_refused_as_not_json(setting: dict[str, Any]) -> None:
    """Found by the message test's first run (COUPLER_FUZZ_SEED=2165667563, message 9: a value
    replaced by 50 000 nested arrays): RecursionError escaped LegacyReader.decode."""
    body = setting["json"].replace('"ACCT_ID":42', '"ACCT_ID":' + "[" * 50_000 + "]" * 50_000).encode()
    with pytest.raises(CouplerError, match=r"^record 7 is not JSON: JSON nested too deeply"):
        setting["reader"].decode(body, "application/json", label="record 7")


def test_a_json_line_nested_deeply_is_reported_with_its_line_and_the_file_goes_on(
        setting: dict[str, Any], tmp_path: Path) -> None:
    """Found by the file test's first run (COUPLER_FUZZ_SEED=2165667563): RecursionError escaped
    JsonlFormat.read and ended the translation of the whole file."""
    good = dumps(ACCOUNT).encode()
    deep = good.replace(b'"name":"Ada Lovelace"', b'"name":' + b'{"a":' * 50_000 + b"1" + b"}" * 50_000)
    written, errors = _translate(setting, tmp_path, [good, deep, good], "nested")
    assert written == 2
    assert [(n, e) for n, e in errors] == [(2, f"{tmp_path / 'in.jsonl'}:2: not JSON: JSON nested too deeply (arrays "
                                               "or objects inside each other thousands of times)")]


def test_a_whole_number_with_a_huge_exponent_is_refused_at_once(setting: dict[str, Any], tmp_path: Path) -> None:
    """Found by the file test (COUPLER_FUZZ_SEED=4127027922, file 383: ``"quantity":1e999999999``):
    ``int(Decimal("1E+999999999"))`` ran for ever in C (no timer could end it) building a number
    of a billion digits before the range of an Avro int was checked. 1e400000 took 4.7 s of CPU."""
    good = dumps(ACCOUNT).encode()
    huge = good.replace(b'"quantity":2', b'"quantity":1e400000')
    assert huge != good
    start = time.process_time()
    written, errors = _translate(setting, tmp_path, [huge, good], "huge")
    assert time.process_time() - start < 1.0
    assert written == 1
    assert [n for n, _ in errors] == [1] and "lines[0].quantity: 1E+400000 has more than 4300 digits" in errors[0][1]


def test_a_json_number_whose_exponent_no_decimal_holds_is_reported(setting: dict[str, Any], tmp_path: Path) -> None:
    """Found by the file test's 120 s run (COUPLER_FUZZ_SEED=4079408031, file 5667: a value
    replaced by -9999E99999999999999999999999999999999999, which JSON reads with
    ``parse_float=Decimal``): decimal.InvalidOperation escaped JsonlFormat.read."""
    good = dumps(ACCOUNT).encode()
    bad = good.replace(b'"status":"ACTIVE"', b'"status":-9999E99999999999999999999999999999999999')
    written, errors = _translate(setting, tmp_path, [bad, good], "exponent")
    assert written == 1
    assert errors == [(1, f"{tmp_path / 'in.jsonl'}:1: not JSON: a number's exponent is beyond what a decimal holds")]
