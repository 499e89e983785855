       01  TXN-HEADER.
           05  TXN-CODE        PIC X(4).
           05  VERSION         PIC 9(2).
           05  CORR-ID         PIC X(16).
           05  REPLY-QUEUE     PIC X(12).
           05  DATA-LEN        PIC 9(5).
