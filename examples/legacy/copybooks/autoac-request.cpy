      * AUTOAC01 request: move the garaging address of a customer's auto policy.
      * 90 bytes, EBCDIC (code page 037), sent with a 2-byte big-endian length prefix.
      * Answered with an AUTOQ-REPLY record: the policy re-rated at the new address.
       01  AUTOAC-REQUEST.
           05  AC-TRAN-CODE        PIC X(4).
           05  AC-CUSTOMER-ID      PIC X(10).
           05  AC-STREET           PIC X(30).
           05  AC-CITY             PIC X(20).
           05  AC-STATE            PIC X(2).
           05  AC-ZIP              PIC X(5).
           05  AC-EFF-DATE         PIC X(10).
           05  FILLER              PIC X(9).
