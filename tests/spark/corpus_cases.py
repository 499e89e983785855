"""The Cobrix corpus cases read through the Spark source (options from the corpus INDEX.md).

Each case: (id, copybook, data files, options). ``input_split_records`` is added to the
splittable cases by the tests so that every file is read by several partitions.
"""

from __future__ import annotations

_T5 = {"record_format": "V", "generate_record_id": "true", "segment_field": "SEGMENT_ID", "ebcdic_code_page": "common"}

CASES: list[tuple[str, str, list[str], dict[str, str]]] = [
    ("test1", "01_test1_fixed_comp3_odo/test1_copybook.cob", ["01_test1_fixed_comp3_odo/test1_data/example.bin"],
     {"ebcdic_code_page": "common"}),
    ("test1a", "01_test1_fixed_comp3_odo/test1a_copybook.cob", ["01_test1_fixed_comp3_odo/test1_data/example.bin"],
     {"ebcdic_code_page": "common", "record_start_offset": "2", "record_end_offset": "27"}),
    ("test1b", "01_test1_fixed_comp3_odo/test1_copybook.cob", ["01_test1_fixed_comp3_odo/test1_data/example.bin"],
     {"ebcdic_code_page": "common", "generate_record_id": "true"}),
    *[
        (f"test3_trim_{trim}", "02_test3_segment_filter_trimming/test3_copybook.cob",
         ["02_test3_segment_filter_trimming/test3_data/TRAN2.AUG31.DATA.dat"],
         {"ebcdic_code_page": "common", "segment_field": "SIGNATURE", "segment_filter": "S9276511",
          "string_trimming_policy": trim})
        for trim in ("none", "left", "right", "both")
    ],
    ("test5", "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob", ["04_test5_ebcdic_rdw_multiseg/test5_data/COMP.DETAILS.SEP30.DATA.dat"],
     {**_T5, "improved_null_detection": "false", "segment_id_level0": "C", "segment_id_level1": "P", "segment_id_prefix": "A"}),
    ("test5a", "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob", ["04_test5_ebcdic_rdw_multiseg/test5_data/COMP.DETAILS.SEP30.DATA.dat"],
     {**_T5, "improved_null_detection": "false", "segment_id_root": "C", "segment_id_prefix": "B"}),
    ("test5b", "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob", ["04_test5_ebcdic_rdw_multiseg/test5b_data/COMP.DETAILS.FEB02.DATA.RDW.BE.dat"],
     {**_T5, "improved_null_detection": "false", "is_rdw_big_endian": "true", "segment_id_level0": "C",
      "segment_id_level1": "P", "segment_id_prefix": "A"}),
    ("test5c", "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob", ["04_test5_ebcdic_rdw_multiseg/test5_data/COMP.DETAILS.SEP30.DATA.dat"],
     {**_T5, "segment_id_root": "C", "segment_id_prefix": "B",
      "redefine_segment_id_map:0": "STATIC-DETAILS => C,D", "redefine-segment-id-map:1": "CONTACTS => P"}),
    ("test5d", "04_test5_ebcdic_rdw_multiseg/test5d_copybook.cob", ["04_test5_ebcdic_rdw_multiseg/test5b_data/COMP.DETAILS.FEB02.DATA.RDW.BE.dat"],
     {"generate_record_id": "true", "segment_field": "SEGMENT_ID", "ebcdic_code_page": "common",
      "record_length_field": "RECORD-LENGTH", "rdw_adjustment": "4", "improved_null_detection": "false",
      "segment_id_level0": "C", "segment_id_level1": "P", "segment_id_prefix": "A"}),
    # both RDW files without segment ids: split through the sparse index
    ("test5_split_le", "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob",
     ["04_test5_ebcdic_rdw_multiseg/test5_data/COMP.DETAILS.SEP30.DATA.dat"], _T5),
    ("test5_split_be", "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob",
     ["04_test5_ebcdic_rdw_multiseg/test5b_data/COMP.DETAILS.FEB02.DATA.RDW.BE.dat"], {**_T5, "is_rdw_big_endian": "true"}),
    ("test6", "05_test6_type_variety/test6_copybook.cob", ["05_test6_type_variety/test6_data/INTEGR.TYPES.NOV28.DATA.dat"],
     {"ebcdic_code_page": "common", "floating_point_format": "IEEE754", "strict_sign_overpunching": "true", "pedantic": "true"}),
    *[
        (f"test9_{cp}", "08_test9_codepages/test9_copybook.cob", ["08_test9_codepages/test9_data/TRAN.APR14.NPT.DATA.dat"],
         {"ebcdic_code_page": cp, **({} if cp == "cp037" else {"string_trimming_policy": "none"})})
        for cp in ("cp037", "cp037_extended", "cp273", "cp500", "cp1140", "cp1141", "cp1148")
    ],
    ("test19", "14_test19_display_numbers/test19_display_num.cob", ["14_test19_display_numbers/test19_display_num/data.dat"],
     {"ebcdic_code_page": "common", "pedantic": "true", "generate_record_id": "true", "improved_null_detection": "false"}),
    ("test21", "15_test21_ascii_nested_odo/test21_copybook.cob", ["15_test21_ascii_nested_odo/test21_data/data.dat"],
     {"record_format": "F", "encoding": "ascii", "variable_size_occurs": "true", "schema_retention_policy": "keep_original"}),
    # several files in one read: File_Id numbers them
    ("two_files", "04_test5_ebcdic_rdw_multiseg/test5_copybook.cob",
     ["04_test5_ebcdic_rdw_multiseg/test5_data/COMP.DETAILS.SEP30.DATA.dat",
      "04_test5_ebcdic_rdw_multiseg/test5_data/COMP.DETAILS.SEP30.DATA.dat"], _T5),
]
