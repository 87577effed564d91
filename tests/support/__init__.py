# SPDX-License-Identifier: Apache-2.0
"""support — helpers the Python tests of more than one tests/ folder share.

Imported as `from support import rtlib`; tests/CMakeLists.txt puts tests/
on PYTHONPATH for every test (and so for the scripts a test spawns), so no
test edits sys.path to find them. A helper used by one folder only stays in
that folder (Python puts a script's own folder first on sys.path).

  configfile      writing config files: write_config (exact content at a
                  path, atomic or in place) and make_config (a folder's
                  ready-to-use config from a few keys)
  rtlib           the runtime tests' rt_probe process, waits with
                  sanitizer-aware bounds (runtime/, cli/)
  sp_testlib      the binding's tests: puts the checkout's python/ first on
                  sys.path, reads stores (python/, hooks/, dropin/, metrics/)
  fixtures        hand-written raw stores (Store) and the parse CLI runner
                  (parse/, analyze/, report/, cli/, clickhouse/)
  scenario        one realistic serving run as a raw store, built on fixtures
  servelike       a long serving-like run over many time buckets
  dashqueries     the Grafana dashboard's queries run against profiler.db
                  (parse/, demo/)
  analyze_fixture the hand-made store whose analyze figures are worked out
                  by hand (analyze/, clickhouse/)
  demo_util       starting and stopping the demo servers, HTTP load
                  (demo/, metrics/, otlp/, report/, analyze/, clickhouse/)
  py_engine       the PyTorch example server as a child process, and the
                  skip when torch/aiohttp is missing (python/, metrics/)
  pd_stores       hand-built disaggregated-serving stores (analyze/,
                  clickhouse/)
  cdp             a headless browser over the Chrome DevTools Protocol
                  (report/, demo/)
"""
