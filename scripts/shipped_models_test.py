#!/usr/bin/env python3
"""Tests of scripts/shipped_models.py on small model files."""

import gzip
import json
import pathlib
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import shipped_models  # noqa: E402


def model(id_, family, weights, device="NVIDIA H100 80GB HBM3", dtype="DTYPE_FP32"):
    return {"id": id_, "device": {"name": device}, "op": "OP_GEMM", "dtype": dtype,
            "family": family, "weights": weights}


class SyncTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)

    def write(self, name, models):
        with gzip.open(self.dir / name, "wt") as f:
            json.dump({"format": 1, "samples": [], "models": models}, f)

    def read(self, name):
        return json.load(gzip.open(self.dir / name))["models"]

    def test_older_copy_replaced_keeping_its_id(self):
        self.write("models-gemm-fp32.json.gz", [model("9", "gemm.ffma", "new")])
        self.write("models.json.gz", [model("5", "gemm.ffma", "old"),
                                      model("2", "conv.ffma", "conv")])
        said = shipped_models.sync(str(self.dir / "models-gemm-fp32.json.gz"), str(self.dir))
        self.assertEqual(said, ["models.json.gz: its copy of gemm.ffma replaced by the "
                                "model in models-gemm-fp32.json.gz"])
        got = self.read("models.json.gz")
        self.assertEqual(got[0], model("5", "gemm.ffma", "new"))
        self.assertEqual(got[1], model("2", "conv.ffma", "conv"))
        # A second run finds nothing to do.
        self.assertEqual(shipped_models.sync(str(self.dir / "models-gemm-fp32.json.gz"),
                                                str(self.dir)), [])

    def test_other_device_precision_and_same_copy_left_alone(self):
        self.write("models-gemm-fp32.json.gz", [model("9", "gemm.ffma", "new")])
        h200 = model("1", "gemm.ffma", "h200", device="NVIDIA H200")
        bf16 = model("3", "gemm.ffma", "bf16", dtype="DTYPE_BF16")
        self.write("models.json.gz", [h200, bf16])
        self.write("models-copy.json.gz", [model("4", "gemm.ffma", "new")])  # only the id differs
        samples = self.dir / "gemm-samples.json.gz"
        self.write(samples.name, [model("6", "gemm.ffma", "old")])  # not a models file
        self.assertEqual(shipped_models.sync(str(self.dir / "models-gemm-fp32.json.gz"),
                                                str(self.dir)), [])
        self.assertEqual(self.read("models.json.gz"), [h200, bf16])
        self.assertEqual(self.read(samples.name), [model("6", "gemm.ffma", "old")])

    def test_keep_newest_by_device_name(self):
        old = model("3", "gemm.ffma", "old")
        new = dict(model("7", "gemm.ffma", "new"),
                   device={"name": "NVIDIA H100 80GB HBM3", "ptxas": "another"})
        other = model("5", "gemm.gemv", "gemv")
        self.write("merged.json.gz", [old, other, new])
        said = shipped_models.keep_newest(str(self.dir / "merged.json.gz"))
        self.assertEqual(said, ["dropped 1 older model(s) of a family trained again"])
        self.assertEqual(self.read("merged.json.gz"), [other, new])
        self.assertEqual(shipped_models.keep_newest(str(self.dir / "merged.json.gz")), [])


if __name__ == "__main__":
    unittest.main()
