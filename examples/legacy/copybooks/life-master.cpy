      * LIFE-POLICY-MASTER: the nightly extract of the life policy master file.
      * 144 bytes, EBCDIC (code page 037), fixed-length records (RECFM=FB): the
      * beneficiary table takes the room of its 3 entries whatever the count says.
       01  LIFE-POLICY-MASTER.
           05  LM-POLICY-ID        PIC X(10).
           05  LM-CUSTOMER-ID      PIC X(10).
           05  LM-NAME             PIC X(30).
           05  LM-STATE            PIC X(2).
           05  LM-ZIP              PIC 9(5).
           05  LM-ISSUE-DATE       PIC 9(8).
           05  LM-FACE-AMOUNT      PIC S9(9)V99 COMP-3.
           05  LM-ANNUAL-PREMIUM   PIC S9(7)V99 COMP-3.
           05  LM-STATUS           PIC X(1).
           05  LM-BENEFICIARY-COUNT PIC 9(1).
           05  LM-BENEFICIARY OCCURS 0 TO 3 TIMES
                   DEPENDING ON LM-BENEFICIARY-COUNT.
               10  LM-BEN-NAME     PIC X(20).
               10  LM-BEN-SHARE    PIC 9(3) COMP-3.
