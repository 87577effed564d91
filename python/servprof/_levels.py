# SPDX-License-Identifier: Apache-2.0
"""Record levels, as in servprof.h (SERVPROF_LEVEL_*): a record is kept when
its level <= the configured profiler_level. Every default level of this
package is one of these, never a bare number."""

import enum


class Level(enum.IntEnum):
    """Record levels: a record is kept when its level <= profiler_level."""
    ERROR = 10
    INFO = 20
    DETAILED = 30
    VERBOSE = 40
    L0 = 10  # aliases of the reference tool
    L1 = 20
    L2 = 30
