       01  QUOTE-REPLY.
           05  POLICY-ID    PIC X(8).
           05  PREMIUM      PIC 9(5)V99.
