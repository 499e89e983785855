      * Made-up: every compiler-directing statement GnuCOBOL accepts in a
      * copybook, as IBM shops leave them in members (no public copybook of
      * the corpus has them all). See SOURCES.md.
      *CBL XREF,MAP
       PROCESS APOST
       EJECT
       01  ACCT-REC.
           SKIP1
           05  ACCT-ID             PIC X(8).
           SKIP2.
           05  ACCT-COUNT          PIC S9(4) COMP.
       TITLE 'ACCOUNT RECORD LAYOUTS'.
      D    05  ACCT-DEBUG-TRACE    PIC X(16).
      D05  ACCT-DEBUG-FLAG         PIC X.
           SKIP3
           05  ACCT-BALANCE        PIC S9(9)V99 COMP-3.
       REPLACE ==:PFX:== BY ==HIST== ==LEN-OF-NOTE== BY ==24==.
       01  :PFX:-REC.
           05  :PFX:-DATE          PIC 9(8).
           05  :PFX:-NOTE          PIC X(LEN-OF-NOTE).
       REPLACE OFF.
           EJECT
       01  TRAILER-REC.
           05  TRAILER-COUNT       PIC 9(7) COMP.
           05  LEN-OF-NOTE         PIC 9(4) COMP.
