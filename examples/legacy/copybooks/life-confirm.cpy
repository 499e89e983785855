      * LIFE-CONFIRM: what job LIFADR01 did with one address change.
      * 164 bytes, EBCDIC (code page 037), fixed-length records (RECFM=FB): the policy
      * table takes the room of its 5 entries whatever LC-POLICY-COUNT says.
      * LC-STATUS: 00 applied, NF no such customer, ER record not understood.
       01  LIFE-CONFIRM.
           05  LC-CUSTOMER-ID      PIC X(10).
           05  LC-STATUS           PIC X(2).
           05  LC-STATE            PIC X(2).
           05  LC-TAX-RATE         PIC SV9(4) COMP-3.
           05  LC-MESSAGE          PIC X(40).
           05  LC-POLICY-COUNT     PIC 9(2).
           05  LC-POLICY OCCURS 0 TO 5 TIMES
                   DEPENDING ON LC-POLICY-COUNT.
               10  LC-POLICY-ID    PIC X(10).
               10  LC-FACE-AMOUNT  PIC S9(9)V99 COMP-3.
               10  LC-PREMIUM      PIC S9(7)V99 COMP-3.
