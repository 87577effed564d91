# SPDX-License-Identifier: Apache-2.0
"""test_dropin_equiv.py — a C++ program written only against the reference
collector's ABI (dropin_client.cpp: dlopen by name, dlsym, the header's
message text) records through servprof exactly what the same scenario
records through servprof's C API (dropin_native.c): the same rows, and
`servprof parse` makes the same reports of both stores.
"""

import os
import unittest

import dropin_lib as D


@unittest.skipUnless(D.CLIENT and os.path.exists(D.CLIENT), "no C++ compiler: dropin_client not built")
class CxxClient(unittest.TestCase):

    def test_symbols_the_header_resolves(self):
        D.T.run([D.CLIENT, "symbols"])

    def test_same_store_and_reports_as_native(self):
        native = D.record(self, [D.NATIVE], "native")
        native2 = D.record(self, [D.NATIVE], "native again")
        client = D.record(self, [D.CLIENT, "scenario"], "C++ client")
        D.assert_same_rows(self, client, native, "C++ client")
        rows = D.T.rows(client)
        self.assertEqual(len(rows), 11, [r["name"] for r in rows])
        self.assertNotIn("hidden", [r["name"] for r in rows])
        self.assertEqual(D.T.meta(client).get("model"), "toy-7b")
        self.assertEqual(D.T.meta(client).get("bad_input"), "0")
        # the batch's request list is structured JSON, as native
        fwd = [r for r in rows if r["name"] == "forward"][0]
        self.assertEqual(fwd["a"]["rid"][1]["iter"], 3)
        # the stored args text is byte for byte a native record's
        by_name = {r["name"]: r["args"] for r in D.T.rows(native)}
        for r in rows:
            self.assertEqual(r["args"], by_name[r["name"]], r["name"])
        want = D.parse(self, native)
        moving = D.moving_columns(want, D.parse(self, native2))
        compared = D.assert_same_reports(self, D.parse(self, client), want, moving, "C++ client")
        self.assertGreater(compared, 20, "too few report cells compared")

    def test_off_records_nothing(self):
        d = D.T.tmpdir(self, prefix="servprof-dropin-")
        cfg = D.T.make_config(d, enable=0)
        D.T.run([D.CLIENT, "scenario"], env={"SERVICE_PROF_CONFIG_PATH": cfg})
        self.assertEqual(D.T.stores(d), [])


if __name__ == "__main__":
    unittest.main()
