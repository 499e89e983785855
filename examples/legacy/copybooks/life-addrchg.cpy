      * LIFE-ADDR-CHANGE: an address change for the life policy batch (job LIFADR01).
      * 120 bytes, EBCDIC (code page 037), fixed-length records (RECFM=FB).
       01  LIFE-ADDR-CHANGE.
           05  LA-REC-TYPE         PIC X(2).
           05  LA-CUSTOMER-ID      PIC X(10).
           05  LA-NAME             PIC X(30).
           05  LA-STREET           PIC X(30).
           05  LA-CITY             PIC X(20).
           05  LA-STATE            PIC X(2).
           05  LA-ZIP              PIC 9(5).
           05  LA-EFF-DATE         PIC X(10).
           05  FILLER              PIC X(11).
