"""IR listings shared by the ssair tests: the paper's `pow` as printed by the printer,
with and without the `# name @ line` annotations."""

POW = """\
function pow(%1 x, %2 n) @ demo.py:1
1 ─      goto #2
2 ┄ %3 = φ (#1 => 1, #3 => %7)            # r @ 2
│   %4 = φ (#1 => %2, #3 => %6)           # n @ 1
│   %5 = gt(%4, 0)                        # @ 3
└──      goto #4 if not %5                # @ 3
3 ─ %6 = sub(%4, 1)                       # n @ 4
│   %7 = mul(%3, %1)                      # r @ 5
└──      goto #2                          # @ 5
4 ─      return %3                        # @ 6"""

POW_PLAIN = """\
function pow(%1 x, %2 n)
1 ─      goto #2
2 ┄ %3 = φ (#1 => 1, #3 => %7)
│   %4 = φ (#1 => %2, #3 => %6)
│   %5 = gt(%4, 0)
└──      goto #4 if not %5
3 ─ %6 = sub(%4, 1)
│   %7 = mul(%3, %1)
└──      goto #2
4 ─      return %3"""
