#!/usr/bin/env python3
"""Records passing full ptxas runs in bench/results/cpu/family_ptxas.tsv.

  scripts/ptxas_record.py LOG FAMILIES_JSON [TSV]

LOG is the output of kernels/family_ptxas_test run with
BLOCKTUNE_PTXAS_SAMPLES=full (scripts/ptxas_record.sh makes it);
FAMILIES_JSON is `blocktune families --json` of the same build, which gives
each family's generator version. A target is recorded only where its test
passed with none failed; its line replaces the target's older one. CI's
smaller run (kernels/family_ptxas_test.cc) requires a line of each family's
current version with the full count.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = ("# family\tprecision\tarch\tversion\tkernels\tfailed\tmax_registers"
          "\tseconds\tcommit\tptx_digest\n")
RESULT = re.compile(r"^(\S+) (\S+) (\S+): (\d+) kernels assembled with .* in ([\d.]+) s, "
                    r"(\d+) failed; .*max registers (\d+); ptx digest of (\d+): ([0-9a-f]{16})$")
LARGEST_PASSED = re.compile(r"^\[ +OK \] FfmaPtxasTest\.LargestThreadTilesTheRulesAcceptDoNotSpill ")
PASSED = re.compile(r"^\[ +OK \] EveryFamily/FamilyPtxasTest\.SampledKernelsAssembleWithoutSpills/(\S+) ")


def name(family, precision, arch):
    return f"{family}_{precision}_{arch}".replace(".", "_")


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    log = pathlib.Path(argv[1]).read_text(encoding="utf-8", errors="replace").splitlines()
    versions = {f["name"]: int(f["version"])
                for f in json.loads(pathlib.Path(argv[2]).read_text())["families"]}
    tsv = pathlib.Path(argv[3]) if len(argv) == 4 else ROOT / "bench/results/cpu/family_ptxas.tsv"
    # The commit the run was built from (COMMIT=, where the log is older).
    commit = os.environ.get("COMMIT") or subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        capture_output=True, text=True).stdout.strip() or "unknown"
    passed = {m.group(1) for line in log if (m := PASSED.match(line))}
    # FfmaPtxasTest's largest tiles (arch "sm_90-largest"), one test for both families.
    if any(LARGEST_PASSED.match(line) for line in log):
        passed |= {name(m.group(1), m.group(2), m.group(3)) for line in log
                   if (m := RESULT.match(line)) and m.group(3) == "sm_90-largest"}
    rows = {}
    if tsv.exists():
        for line in tsv.read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#"):
                rows[tuple(line.split("\t")[:3])] = line
    recorded = 0
    for line in log:
        m = RESULT.match(line)
        if not m:
            continue
        family, precision, arch, kernels, seconds, failed, regs, of, digest = m.groups()
        if name(family, precision, arch) not in passed or failed != "0":
            print(f"not recorded (failed): {line}", file=sys.stderr)
            continue
        if kernels != of:
            print(f"not recorded (assembled {kernels} of a full run of {of}): {line}",
                  file=sys.stderr)
            continue
        if family not in versions:
            print(f"not recorded ({family} is not in the families list): {line}",
                  file=sys.stderr)
            continue
        rows[(family, precision, arch)] = "\t".join(
            [family, precision, arch, str(versions[family]), kernels, failed, regs,
             seconds, commit, digest])
        recorded += 1
    tsv.write_text(HEADER + "".join(rows[k] + "\n" for k in sorted(rows)), encoding="utf-8")
    print(f"{recorded} targets recorded in {tsv} ({len(rows)} lines)")
    return 0 if recorded else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
