# SPDX-License-Identifier: Apache-2.0
"""scenario_util.py — runs tiny-llm-server with a planted limit under
servprof-load, collection on from the start, and returns `servprof analyze
--format json` of the profile. Shared by the analyze scenario and compare
tests."""
import json
import os
import subprocess
import tempfile

from support import demo_util  # noqa: E402
from support.demo_util import CLI, LOAD, SLACK, Server  # noqa: E402


def profile(server_args, load_args, seconds, workdir=None):
    """Serves `seconds` of load; returns the folder of raw stores."""
    work = workdir or tempfile.mkdtemp(prefix="sp-scenario-")
    prof = os.path.join(work, "prof")
    cfg = os.path.join(work, "profiler.json")
    with open(cfg, "w") as f:
        json.dump({"enable": 1, "prof_dir": prof, "profiler_level": "INFO", "timelimit": 0, "domain": ""}, f)
    with Server(list(server_args), env={"SERVICE_PROF_CONFIG_PATH": cfg}, workdir=work) as s:
        load = subprocess.run([LOAD, "--port", str(s.port), "--duration", str(seconds), "--quiet",
                               "--timeout", str(int(60 * SLACK)), *load_args],
                              capture_output=True, text=True, timeout=(seconds + 120) * SLACK)
        assert load.returncode == 0, load.stdout + load.stderr
        assert s.stop() == 0, s.output()
    return prof


def analyze(path, *extra):
    r = subprocess.run([CLI, "analyze", "-i", path, "--format", "json", *extra], capture_output=True,
                       text=True, timeout=300 * SLACK)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def ids(doc):
    return [f["id"] for f in doc["findings"]]


def describe(doc):
    h = doc["headline"]
    lines = [f"verdict {h['verdict']}, busy {h['busy_frac']:.2f} stalled {h['stalled_frac']:.2f} "
             f"idle {h['idle_frac']:.2f}, kv peak {h['kv_usage_peak']}, batch {h['batch_size_mean']}, "
             f"queue mean {h['queue_ms']['mean']}, e2e mean {h['e2e_ms']['mean']}"]
    for f in doc["findings"]:
        lines.append(f"  {f['rank']}. {f['id']} score {f['score']:.3f}: {f['title']}")
    return "\n".join(lines)


SMALL_MODEL = demo_util.SMALL_MODEL
