"""COBOL copybook translator: copybook text -> layout -> Avro schema, record bytes <-> dicts.

Modules: ``parser`` (copybook grammar -> entries), ``layout`` (offsets, sizes, Cobrix-style
names), ``avro`` (layout -> Avro schema), ``decoder`` / ``encoder`` (bytes <-> dicts);
``picture``, ``codepages``, ``options`` and ``framing`` hold the elementary types, code
pages, the option dictionary and record framing.
"""
