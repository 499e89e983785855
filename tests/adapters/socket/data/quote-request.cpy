       01  QUOTE-REQ.
           05  POLICY-ID    PIC X(8).
           05  DRIVER-AGE   PIC 9(3).
           05  FILLER       PIC X(4).
