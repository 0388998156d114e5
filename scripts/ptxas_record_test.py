#!/usr/bin/env python3
"""Tests of scripts/ptxas_record.py on a made-up log of family_ptxas_test."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parent / "ptxas_record.py"

LOG = """[ RUN      ] EveryFamily/FamilyPtxasTest.SampledKernelsAssembleWithoutSpills/gemm_mma_bf16_sm_90
gemm.mma bf16 sm_90: 300 kernels assembled with /usr/local/cuda/bin/ptxas (2 threads) in 73.8 s, 0 failed; 1428 drawn, rejected: params=758; max registers 250; ptx digest of 300: 0123456789abcdef
[       OK ] EveryFamily/FamilyPtxasTest.SampledKernelsAssembleWithoutSpills/gemm_mma_bf16_sm_90 (73816 ms)
[ RUN      ] EveryFamily/FamilyPtxasTest.SampledKernelsAssembleWithoutSpills/gemm_mma_fp16_sm_90
gemm.mma fp16 sm_90: 300 kernels assembled with /usr/local/cuda/bin/ptxas (2 threads) in 70.1 s, 2 failed; 1400 drawn, rejected: params=700; max registers 255; ptx digest of 300: 00000000000000ff
[       OK ] EveryFamily/FamilyPtxasTest.SampledKernelsAssembleWithoutSpills/gemm_mma_fp16_sm_90 (70100 ms)
[ RUN      ] EveryFamily/FamilyPtxasTest.SampledKernelsAssembleWithoutSpills/gemm_mma_tf32_sm_90
gemm.mma tf32 sm_90: 10 kernels assembled with /usr/local/cuda/bin/ptxas (2 threads) in 3.1 s, 0 failed; 60 drawn, rejected: params=50; max registers 200; ptx digest of 300: 0000000000000aaa
[       OK ] EveryFamily/FamilyPtxasTest.SampledKernelsAssembleWithoutSpills/gemm_mma_tf32_sm_90 (3100 ms)
"""

LARGEST = """[ RUN      ] FfmaPtxasTest.LargestThreadTilesTheRulesAcceptDoNotSpill
gemm.ffma fp32 sm_90-largest: 120 kernels assembled with /usr/local/cuda/bin/ptxas (2 threads) in 40.0 s, 0 failed; 120 accepted tiles of 128 or 256 accumulators; max registers 254; ptx digest of 120: 00000000000000bb
[       OK ] FfmaPtxasTest.LargestThreadTilesTheRulesAcceptDoNotSpill (40000 ms)
"""


class PtxasRecordTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        (self.dir / "log").write_text(LOG)
        (self.dir / "families.json").write_text(json.dumps(
            {"families": [{"name": "gemm.mma", "version": 4}]}))
        self.tsv = self.dir / "record.tsv"

    def run_script(self):
        return subprocess.run(
            [sys.executable, str(SCRIPT), str(self.dir / "log"),
             str(self.dir / "families.json"), str(self.tsv)],
            capture_output=True, text=True, env=dict(os.environ, COMMIT="abc1234"))

    def test_records_passing_targets_with_their_version_only(self):
        self.tsv.write_text("# header\ngemm.mma\tbf16\tsm_90\t3\t300\t0\t240\t60.0\told\n"
                            "conv.mma\tbf16\tsm_90\t1\t300\t0\t200\t50.0\told\n")
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in self.tsv.read_text().splitlines() if not l.startswith("#")]
        self.assertEqual(lines, ["conv.mma\tbf16\tsm_90\t1\t300\t0\t200\t50.0\told",
                                 "gemm.mma\tbf16\tsm_90\t4\t300\t0\t250\t73.8\tabc1234"
                                 "\t0123456789abcdef"])
        # 2 failed (its OK line notwithstanding), and a run of 10 of 300.
        self.assertIn("not recorded (failed): gemm.mma fp16 sm_90", r.stderr)
        self.assertIn("not recorded (assembled 10 of a full run of 300): gemm.mma tf32", r.stderr)

    def test_records_the_largest_tiles_where_their_test_passed(self):
        (self.dir / "log").write_text(LARGEST)
        (self.dir / "families.json").write_text(json.dumps(
            {"families": [{"name": "gemm.ffma", "version": 2}]}))
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in self.tsv.read_text().splitlines() if not l.startswith("#")]
        self.assertEqual(lines, ["gemm.ffma\tfp32\tsm_90-largest\t2\t120\t0\t254\t40.0"
                                 "\tabc1234\t00000000000000bb"])
        (self.dir / "log").write_text(LARGEST.replace("[       OK ]", "[  FAILED  ]"))
        self.tsv.unlink()
        self.assertEqual(self.run_script().returncode, 1)

    def test_nothing_passed_is_an_error(self):
        (self.dir / "log").write_text(LOG.replace("[       OK ]", "[  FAILED  ]"))
        r = self.run_script()
        self.assertEqual(r.returncode, 1)
        self.assertIn("0 targets recorded", r.stdout)


if __name__ == "__main__":
    unittest.main()
