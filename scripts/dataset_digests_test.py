#!/usr/bin/env python3
"""Tests of scripts/dataset_digests.py on small dataset files."""

import gzip
import json
import pathlib
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import dataset_digests  # noqa: E402


def sample(m, version, digest=None, family="gemm.ffma", campaign="7"):
    s = {"campaign_id": campaign,
         "context": {"gemm": {"m": str(m), "n": "128", "k": "256"}},
         "status": "ok", "median_seconds": 1e-5 * m, "measured_unix": "100",
         "kernel": {"family": family, "generator_version": version,
                    "params": [{"name": "ML", "value": "64"}]}}
    if digest:
        s["kernel_digest"] = digest
    return s


class DigestsTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)

    def write(self, name, samples):
        path = self.dir / name
        with gzip.open(path, "wt") as f:
            json.dump({"format": "blocktune.dataset.v1", "samples": samples}, f)
        return str(path)

    def read(self, name):
        return json.load(gzip.open(self.dir / name))["samples"]

    def families(self, versions):
        path = self.dir / "families.json"
        path.write_text(json.dumps(
            {"families": [{"name": n, "version": v} for n, v in versions.items()]}))
        return str(path)

    def test_fill_copies_digests_and_keeps_the_rest(self):
        f = self.write("f.json.gz", [sample(1, 2), sample(2, 2, "00000000000000aa"),
                                     sample(3, 1)])
        # The export: campaign ids cleared, digests of current samples filled.
        e = self.write("e.json.gz", [
            dict(sample(1, 2, "1111111111111111"), campaign_id="0"),
            sample(2, 2, "00000000000000aa"), sample(3, 1)])
        dataset_digests.fill(f, e)
        got = self.read("f.json.gz")
        self.assertEqual(got[0]["kernel_digest"], "1111111111111111")
        self.assertEqual(got[0]["campaign_id"], "7")  # FILE's, not the export's
        self.assertEqual(got[1]["kernel_digest"], "00000000000000aa")
        self.assertNotIn("kernel_digest", got[2])  # stale: none

    def test_relabel_moves_changed_kernels_out(self):
        f = self.write("f.json.gz", [sample(1, 2, "a" * 16), sample(2, 2, "b" * 16),
                                     sample(3, 3, "c" * 16, family="gemm.gemv")])
        e = self.write("e.json.gz", [sample(1, 3, "a" * 16), sample(2, 2, "b" * 16),
                                     sample(3, 3, "c" * 16, family="gemm.gemv")])
        stale = str(self.dir / "stale.json.gz")
        fam = self.families({"gemm.ffma": 3, "gemm.gemv": 3})
        dataset_digests.relabel(f, e, stale, fam)
        got = self.read("f.json.gz")
        self.assertEqual([s["context"]["gemm"]["m"] for s in got], ["1", "3"])
        self.assertEqual(got[0]["kernel"]["generator_version"], 3)
        moved = self.read("stale.json.gz")
        self.assertEqual(len(moved), 1)
        self.assertEqual(moved[0]["kernel"]["generator_version"], 2)
        # A second file's stale samples are appended.
        f2 = self.write("f2.json.gz", [sample(4, 2)])
        e2 = self.write("e2.json.gz", [sample(4, 2)])
        dataset_digests.relabel(f2, e2, stale, fam)
        self.assertEqual(len(self.read("stale.json.gz")), 2)
        self.assertEqual(self.read("f2.json.gz"), [])

    def test_a_different_sample_changes_nothing(self):
        f = self.write("f.json.gz", [sample(1, 2)])
        e = self.write("e.json.gz", [sample(5, 2, "a" * 16)])
        with self.assertRaises(SystemExit):
            dataset_digests.fill(f, e)
        self.assertNotIn("kernel_digest", self.read("f.json.gz")[0])
        e = self.write("e.json.gz", [sample(1, 2), sample(2, 2)])
        with self.assertRaises(SystemExit):
            dataset_digests.fill(f, e)


if __name__ == "__main__":
    unittest.main()
