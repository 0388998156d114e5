#!/usr/bin/env python3
"""Tests of scripts/readme_tables.py on copies of README.md and bench/results/."""

import contextlib
import io
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
        self.results = self.dir / "results"
        shutil.copytree(ROOT / "bench" / "results", self.results)

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


if __name__ == "__main__":
    unittest.main()
