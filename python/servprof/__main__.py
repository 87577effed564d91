# SPDX-License-Identifier: Apache-2.0
"""`python -m servprof` and the `servprof` console command: the C tool.

The verbs (parse, config, enable, disable, stress, ...) are the C `servprof`
tool's; this runs it with the same arguments and returns its exit status.
Except two, which are the Python binding's own (servprof/_run.py): `run`
(start a program with hook files applied) and `hooks check`.
Where the tool is looked for, in this order:

1. ``$SERVPROF_BIN`` — a path to the tool (only that one, when set);
2. ``servprof/bin/servprof`` inside this package (a wheel built by
   scripts/build-wheel.sh carries it);
3. ``servprof`` on PATH — skipping scripts, so that this console command
   (itself named servprof) never runs itself.

When none is found, one line on stderr says so and the status is 127.
"""

import os
import shutil
import sys
from typing import List, Optional, Sequence


def _is_binary(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_tool() -> Optional[str]:
    """The path of the C servprof tool, or None."""
    env = os.environ.get("SERVPROF_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "servprof")
    if os.access(here, os.X_OK):
        return here
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = shutil.which("servprof", path=d) if d else None
        if cand and _is_binary(cand):
            return cand
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args: List[str] = list(sys.argv[1:] if argv is None else argv)
    # Two verbs are the binding's own (they run Python programs): run, hooks.
    if args and args[0] == "run":
        from ._run import run_main
        return run_main(args[1:])
    if args and args[0] == "hooks":
        from ._run import hooks_main
        return hooks_main(args[1:])
    tool = find_tool()
    if tool is None:
        sys.stderr.write("servprof: the servprof tool was not found (not in this package, not on "
                         "PATH; SERVPROF_BIN=%s); install a wheel built by "
                         "scripts/build-wheel.sh, or build the C tool\n"
                         % os.environ.get("SERVPROF_BIN", "(unset)"))
        return 127
    if argv is None:
        os.execv(tool, [tool] + args)  # the tool's own status, stdin and signals
    import subprocess
    return subprocess.call([tool] + args)


if __name__ == "__main__":
    sys.exit(main())
