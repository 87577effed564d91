# SPDX-License-Identifier: Apache-2.0
"""configfile.py — the tests' two ways of writing a servprof config file.

They differ in what the caller knows, so they are two named functions
rather than one with a mode:
  write_config(path, obj|text, atomic)  the exact content at a given path;
      the runtime tests need byte control and both edit styles (temp file
      + rename, or truncate + write in place) because the live watcher must
      see each.
  make_config(folder, **keys)  a ready-to-use config in folder/config.json
      collecting into folder/prof, enable 0 unless keys say otherwise; the
      binding, hooks and drop-in tests only care about a few keys.
"""
import json
import os


def write_config(path, obj=None, text=None, atomic=True):
    """Write obj as JSON (or text verbatim) to path; atomic=True renames a
    temp file over it (a new inode), False truncates and writes in place."""
    data = text if text is not None else json.dumps(obj, indent=4) + "\n"
    if atomic:
        tmp = path + ".edit~"
        with open(tmp, "w") as f:
            f.write(data)
        os.rename(tmp, path)
    else:
        with open(path, "w") as f:
            f.write(data)


def make_config(folder, **keys):
    """A config file in folder with collection into folder/prof; returns
    its path. keys override (enable defaults to 0)."""
    cfg = {"enable": 0, "prof_dir": os.path.join(folder, "prof"), "profiler_level": "INFO"}
    cfg.update(keys)
    path = os.path.join(folder, "config.json")
    write_config(path, text=json.dumps(cfg))
    return path
