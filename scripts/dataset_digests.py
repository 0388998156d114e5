#!/usr/bin/env python3
"""Kernel digests and generator versions of dataset files, from a daemon's
export of them (scripts/dataset_digests.sh).

  scripts/dataset_digests.py fill FILE EXPORTED
  scripts/dataset_digests.py relabel FILE EXPORTED STALE FAMILIES

EXPORTED is FILE imported into an empty store and exported again with
--samples --include-stale: the same samples in the same order. The import
stored every stale sample whose kernel digest this build's generator
reproduces as current; the export gave each current sample its digest.

fill: each sample of FILE that has no kernel_digest gets EXPORTED's.
relabel: each sample of FILE takes EXPORTED's generator version (a stale
one the import re-labeled becomes current); the samples that stay stale
(their kernel changed: a version below the family's current one in
FAMILIES, `blocktune families --json`) leave FILE and are appended to the
dataset STALE (created if missing), to be measured again (campaign
--retune-stale).
Either checks that the two are the same sample (context, kernel family and
parameters, time measured) and changes nothing else of FILE.
"""
import gzip
import json
import os
import sys


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def same_sample(a, b):
    keys = ("context", "median_seconds", "measured_unix", "status")
    ka, kb = a.get("kernel", {}), b.get("kernel", {})
    return (all(a.get(k) == b.get(k) for k in keys) and
            ka.get("family") == kb.get("family") and
            ka.get("params") == kb.get("params"))


def save(path, data):
    with gzip.open(path, "wt") as f:
        json.dump(data, f, indent=1)


def paired(path, exported_path):
    data = load(path)
    exported = load(exported_path).get("samples", [])
    samples = data.get("samples", [])
    if len(samples) != len(exported):
        sys.exit(f"{path}: {len(samples)} samples, but its export has "
                 f"{len(exported)}; not changed")
    for i, (s, e) in enumerate(zip(samples, exported)):
        if not same_sample(s, e):
            sys.exit(f"{path}: sample {i} differs from its export; not changed")
    return data, samples, exported


def relabel(path, exported_path, stale_path, families_path):
    with open(families_path) as f:
        current = {x["name"]: int(x["version"]) for x in json.load(f)["families"]}
    data, samples, exported = paired(path, exported_path)
    kept, stale, relabeled = [], [], 0
    for s, e in zip(samples, exported):
        old = s["kernel"].get("generator_version", 0)
        new = e["kernel"].get("generator_version", 0)
        if new < current[e["kernel"]["family"]]:
            stale.append(s)
            continue
        if new != old:
            s["kernel"]["generator_version"] = new
            relabeled += 1
        kept.append(s)
    if relabeled or stale:
        data["samples"] = kept
        save(path, data)
    if stale:
        out = load(stale_path) if os.path.exists(stale_path) else {
            "format": data.get("format", "blocktune.dataset.v1"), "samples": []}
        out["samples"].extend(stale)
        save(stale_path, out)
    print(f"{path}: {relabeled} of {len(samples)} samples re-labeled current "
          f"(the same kernel digest), {len(stale)} stale moved to {stale_path}")


def fill(path, exported_path):
    data, samples, exported = paired(path, exported_path)
    filled = already = 0
    for s, e in zip(samples, exported):
        if s.get("kernel_digest"):
            already += 1
        elif e.get("kernel_digest"):
            s["kernel_digest"] = e["kernel_digest"]
            filled += 1
    if filled:
        save(path, data)
    print(f"{path}: {filled} of {len(samples)} samples got a kernel digest "
          f"({already} had one; the rest are stale or not generated here)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "fill":
        fill(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "relabel":
        relabel(*sys.argv[2:])
    else:
        sys.exit(__doc__)
