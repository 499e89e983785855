      * AUTOQ01 reply of the auto policy rating service.
      * 61 bytes, EBCDIC (code page 037), sent with a 2-byte big-endian length prefix.
      * AR-STATUS: 00 quoted, RJ refused by underwriting rules, ER request not understood.
       01  AUTOQ-REPLY.
           05  AR-POLICY-ID        PIC X(10).
           05  AR-STATUS           PIC X(2).
           05  AR-PREMIUM          PIC S9(7)V99 COMP-3.
           05  AR-CURRENCY         PIC X(3).
           05  AR-RISK-CLASS       PIC X(1).
           05  AR-MESSAGE          PIC X(40).
