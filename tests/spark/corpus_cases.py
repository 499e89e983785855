"""The Cobrix corpus cases read through the Spark source.

The case table (copybook, data files, options of every case in the corpus INDEX.md) is the
copybook translator's own (``tests/translators/copybook/test_corpus.py``); this module adds
cases that exercise the Spark source's splitting: the RDW files without segment ids (split
through the sparse index) and several files in one read (``File_Id``).
"""

from __future__ import annotations

from tests.translators.copybook.test_corpus import CASES as TRANSLATOR_CASES

_T5 = {"record_format": "V", "generate_record_id": "true", "segment_field": "SEGMENT_ID", "ebcdic_code_page": "common"}
_T5_DATA = "04_test5_ebcdic_rdw_multiseg/test5_data/COMP.DETAILS.SEP30.DATA.dat"
_T5B_DATA = "04_test5_ebcdic_rdw_multiseg/test5b_data/COMP.DETAILS.FEB02.DATA.RDW.BE.dat"
_T5_CPY = "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob"

#: (id, copybook, data files, options), paths relative to the corpus
CASES: list[tuple[str, str, list[str], dict[str, str]]] = [
    *[(c.id, c.copybook, list(c.data), dict(c.options)) for c in TRANSLATOR_CASES],
    ("test5_split_le", _T5_CPY, [_T5_DATA], _T5),
    ("test5_split_be", _T5_CPY, [_T5B_DATA], {**_T5, "is_rdw_big_endian": "true"}),
    ("two_files", _T5_CPY, [_T5_DATA, _T5_DATA], _T5),
]
