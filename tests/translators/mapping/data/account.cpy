       01  ACCOUNT-REC.
           05  ACCT-ID         PIC 9(6).
           05  FIRST-NAME      PIC X(10).
           05  LAST-NAME       PIC X(12).
           05  STATUS-CODE     PIC X.
           05  OPEN-DATE       PIC 9(8).
           05  BALANCE         PIC S9(9)V99 COMP-3.
           05  BRANCH-CODE     PIC X(4).
           05  BRANCH-CITY     PIC X(10).
           05  LINES OCCURS 2 TIMES.
               10  SKU         PIC X(6).
               10  QTY         PIC 9(3).
               10  PRICE       PIC 9(5)V99.
           05  FILLER          PIC X(3).
