      * AUTOQ01 request: rate an auto policy (auto policy rating service).
      * 40 bytes, EBCDIC (code page 037), sent with a 2-byte big-endian length prefix.
       01  AUTOQ-REQUEST.
           05  AQ-TRAN-CODE        PIC X(4).
           05  AQ-POLICY-ID        PIC X(10).
           05  AQ-DRIVER-AGE       PIC 9(3).
           05  AQ-VEHICLE-YEAR     PIC 9(4).
           05  AQ-VEHICLE-VALUE    PIC 9(7)V99 COMP-3.
           05  AQ-CLAIMS-5Y        PIC 9(2).
           05  AQ-STATE            PIC X(2).
           05  FILLER              PIC X(10).
