# SPDX-License-Identifier: Apache-2.0
"""The `vllm.general_plugins` entry point of the servprof wheel.

vLLM calls every function registered under that entry-point group in each
process it starts (API server, engine core, workers), before it builds its
engine. So installing servprof into vLLM's environment is enough: this
installs the shipped vLLM set for the installed version (builtin:vllm) and
any files of $SERVPROF_HOOKS / $PROFILING_SYMBOLS_PATH. Installing twice in
one process (this and `python -m servprof run`) binds nothing twice.
SERVPROF_VLLM_PLUGIN=0 turns it off. Never raises into vLLM.
"""

import os
import sys


def register():
    if os.environ.get("SERVPROF_VLLM_PLUGIN", "1") == "0":
        return
    try:
        from . import install
        install(["builtin:vllm"])
    except BaseException as e:
        try:
            sys.stderr.write("servprof hooks: WARNING: the vLLM plugin did not install: %s: %s\n"
                             % (type(e).__name__, e))
        except Exception:
            pass
