# SPDX-License-Identifier: Apache-2.0
"""Version strings of hook files (min_version / max_version) and of the
installed distributions, compared as PEP 440 orders them for the forms
frameworks publish: 0.9.1, 0.10.1.1, 0.14.0rc1, 0.5.4.post1, 0.11.0.dev3,
1.0+cu121. The standard library has no version type and a profiler must not
depend on `packaging` being installed, hence this small parser.

Design: a version becomes a tuple that sorts like PEP 440: the release
numbers (trailing zeros dropped, so 0.9 == 0.9.0), then the phase
(dev < a < b < rc < final < post) with its number. The local part (+...)
is ignored: 0.9.1+cu121 is 0.9.1.
"""

import re

_V = re.compile(r"""^\s*v?(?P<rel>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre>a|alpha|b|beta|rc|c|pre|preview)[-_.]?(?P<pren>\d*))?
    (?:[-_.]?(?P<post>post|rev|r)[-_.]?(?P<postn>\d*))?
    (?:[-_.]?(?P<dev>dev)[-_.]?(?P<devn>\d*))?
    (?:\+[a-z0-9.]+)?\s*$""", re.X | re.I)

_PRE = {"a": 1, "alpha": 1, "b": 2, "beta": 2, "rc": 3, "c": 3, "pre": 3, "preview": 3}


def parse(text):
    """A sortable key for a version string; ValueError when it is not one."""
    m = _V.match(str(text))
    if not m:
        raise ValueError("%r is not a version (expected e.g. 0.9.1, 0.14.0rc1)" % (text,))
    rel = [int(x) for x in m.group("rel").split(".")]
    while len(rel) > 1 and rel[-1] == 0:
        rel.pop()
    if m.group("pre"):
        phase = (_PRE[m.group("pre").lower()], int(m.group("pren") or 0))
    elif m.group("post"):
        phase = (5, int(m.group("postn") or 0))
    else:
        phase = (4, 0)
    # A dev release comes before the release (or pre/post) it leads to.
    dev = (0, int(m.group("devn") or 0)) if m.group("dev") else (1, 0)
    if m.group("dev") and not m.group("pre") and not m.group("post"):
        phase = (0, 0)
    return (tuple(rel), phase, dev)


def in_range(version, lo, hi):
    """True when lo <= version <= hi (either bound None). All strings."""
    v = parse(version)
    if lo is not None and v < parse(lo):
        return False
    if hi is not None and v > parse(hi):
        return False
    return True
