#!/usr/bin/env python3
"""Tests of scripts/readme_tables.py on copies of README.md and bench/results/."""

import contextlib
import io
import json
import pathlib
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import readme_tables  # noqa: E402

ROOT = readme_tables.ROOT


class ReadmeTablesTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)
        self.readme = self.dir / "README.md"
        shutil.copy(ROOT / "README.md", self.readme)
        # bench/results/ is 70 MB in 2,400 files: copy only the files a
        # render of the committed tree reads.
        self.results = self.dir / "results"
        for rel in self.read:
            (self.results / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "bench" / "results" / rel, self.results / rel)

    @classmethod
    def setUpClass(cls):
        r = readme_tables.Results(ROOT / "bench" / "results")
        readme_tables.render((ROOT / "README.md").read_text(encoding="utf-8"), r)
        cls.read = sorted(r._cache)

    def run_script(self, *extra):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = readme_tables.main(["--readme", str(self.readme), "--results",
                                       str(self.results), *extra])
        return code, out.getvalue(), err.getvalue()

    def edit(self, path, old, new):
        text = path.read_text(encoding="utf-8")
        self.assertIn(old, text)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def test_committed_readme_is_generated(self):
        code, out, _ = self.run_script("--check")
        self.assertEqual(code, 0, out)

    def test_a_changed_result_fails_the_check_then_rewrites(self):
        # The GEMM rate of the counters line, whatever today's figure is.
        path = self.results / "h100" / "campaigns.txt"
        rate = re.search(r"^# campaign counters: gemm \d+ samples in [\d.]+ s (= [\d.]+ samples/s)",
                         path.read_text(encoding="utf-8"), re.M)
        self.assertIsNotNone(rate)
        self.assertNotEqual(rate.group(1), "= 93.4 samples/s")
        self.edit(path, rate.group(1), "= 93.4 samples/s")
        code, out, _ = self.run_script("--check")
        self.assertEqual(code, 1)
        self.assertIn("93.4 samples/s", out)
        self.assertEqual(self.run_script()[0], 0)
        self.assertIn("93.4 samples/s", self.readme.read_text(encoding="utf-8"))
        self.assertEqual(self.run_script("--check")[0], 0)

    def test_a_hand_edit_inside_a_region_fails_the_check(self):
        # The bf16 "all shapes" cell of the generated per-group table, changed.
        cell = re.search(r"\| \*\*all shapes\*\* \| ([0-9.]+)× \((\d+)\) \|",
                         self.readme.read_text(encoding="utf-8"))
        self.assertIsNotNone(cell)
        edited = f"{float(cell.group(1)) + 0.01:.2f}× ({cell.group(2)})"
        self.edit(self.readme, cell.group(0), f"| **all shapes** | {edited} |")
        code, out, _ = self.run_script("--check")
        self.assertEqual(code, 1)
        self.assertIn(f"-| **all shapes** | {edited}", out)

    def test_prose_outside_the_regions_is_kept(self):
        self.edit(self.readme, "## The daemon", "## The daemon, edited by hand")
        self.assertEqual(self.run_script()[0], 0)
        self.assertIn("## The daemon, edited by hand", self.readme.read_text(encoding="utf-8"))

    def test_a_missing_line_is_an_error_naming_the_file(self):
        path = self.results / "cpu" / "sampler_bench.txt"
        path.write_text(re.sub(r"^conv .*\n", "", path.read_text(), flags=re.M))
        code, _, err = self.run_script("--check")
        self.assertEqual(code, 2)
        self.assertIn("cpu/sampler_bench.txt", err)

    def test_a_removed_region_is_an_error(self):
        text = self.readme.read_text(encoding="utf-8")
        self.readme.write_text(text.replace("<!-- generated: sampling -->\n", "", 1)
                               .replace("<!-- end generated -->", "", 1), encoding="utf-8")
        code, _, err = self.run_script("--check")
        self.assertEqual(code, 2)
        self.assertIn("missing", err)


    def models_dir(self, *files):
        """A models/pretrained/ of copies of these shipped files."""
        root = self.dir / "pretrained"
        for rel in files:
            dst = root / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "models" / "pretrained" / rel, dst)
        return root

    def generated(self, name):
        text = self.readme.read_text(encoding="utf-8")
        m = re.search(rf"<!-- generated: {name} -->\n(.*?)<!-- end generated -->", text, re.S)
        self.assertIsNotNone(m)
        return " ".join(m.group(1).split())

    def test_a_family_without_its_model_is_listed_as_missing(self):
        # Only the H200's bf16 convolution models: every other family of the
        # H200 is missing, the H100 has no row at all.
        models = self.models_dir("h200/models-conv-bf16.json.gz")
        self.assertEqual(self.run_script("--models", str(models))[0], 0)
        text = self.generated("models")
        self.assertIn("| H200 | conv | bf16 | conv.wgmma_sk (v1) |", text)
        self.assertNotIn("| H100 |", text)
        self.assertIn("H200: bf16 gemm.mma, gemm.wgmma,", text)
        self.assertIn("fp32 gemm.ffma, conv.ffma, gemm.gemv, gemm.ffma_k, gemm.ffma_kpk.", text)
        self.assertNotIn("conv.wgmma_sk;", text.split("H200:")[1].split("fp16")[0])

    def test_a_model_of_an_older_generator_version_says_stale(self):
        tsv = self.results / "cpu" / "families.tsv"
        self.edit(tsv, "conv.wgmma_sk\tconv\tbf16,fp16,tf32\t1\t",
                  "conv.wgmma_sk\tconv\tbf16,fp16,tf32\t2\t")
        self.assertEqual(self.run_script()[0], 0)
        self.assertIn("| H200 | conv | bf16 | conv.wgmma_sk (v1, STALE (now v2)) |",
                      self.generated("models"))

    def test_the_families_list_is_checked_against_the_cli(self):
        # A stand-in CLI that lists one family more than the committed file.
        tsv = self.results / "cpu" / "families.tsv"
        fams = [dict(zip(["name", "op", "precisions", "version",
                          "min_compute_capability"], line.split("\t")))
                for line in tsv.read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#")]
        for f in fams:
            f["precisions"] = f["precisions"].split(",")
            f["version"] = int(f["version"])
            f["min_compute_capability"] = int(f["min_compute_capability"])
        fams.append({"name": "gemm.new", "op": "gemm", "precisions": ["bf16"],
                     "version": 1, "min_compute_capability": 90})
        cli = self.dir / "blocktune"
        (self.dir / "families.json").write_text(json.dumps({"families": fams}))
        cli.write_text(f"#!/bin/sh\ncat {self.dir / 'families.json'}\n")
        cli.chmod(0o755)
        code, out, err = self.run_script("--check", "--blocktune", str(cli))
        self.assertEqual(code, 1)
        self.assertIn("+gemm.new\tgemm\tbf16\t1\t90", out)
        self.assertIn("--blocktune", err)
        self.assertEqual(self.run_script("--blocktune", str(cli))[0], 0)
        self.assertIn("gemm.new", tsv.read_text(encoding="utf-8"))
        text = self.generated("models")
        self.assertRegex(text, r"H100: (?:(?!H200:).)*\bgemm\.new\b")
        self.assertRegex(text, r"H200: .*\bgemm\.new\b")
        self.assertEqual(self.run_script("--check", "--blocktune", str(cli))[0], 0)

    def test_a_cli_that_fails_is_an_error(self):
        code, _, err = self.run_script("--check", "--blocktune", str(self.dir / "nothing"))
        self.assertEqual(code, 2)
        self.assertIn("families --json", err)

if __name__ == "__main__":
    unittest.main()
