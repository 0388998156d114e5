#!/usr/bin/env python3
"""After a training wrote NEW (DIR/models-<op>-<dtype>.json.gz), every other
shipped models*.json.gz in DIR that holds a model of the same (device name,
op, precision, family) gets the new model in its place, keeping its own id.

The daemon answers with the model of a family it stored last, so an older
copy in a file imported after NEW would answer instead of the model just
trained (PretrainedTest.NoShippedModelIsShadowedByAnOlderCopy fails on such
a pair). scripts/train_pretrained.sh runs this after every training.

  scripts/sync_model_copies.py DIR/models-gemm-fp32.json.gz DIR
"""
import gzip
import json
import os
import sys


def key(m):
    return ((m.get("device") or {}).get("name"), m["op"], m["dtype"], m["family"])


def same(a, b):
    """Equal but for the id (an export from another store renumbers them)."""
    return ({k: v for k, v in a.items() if k != "id"} ==
            {k: v for k, v in b.items() if k != "id"})


def sync(new_path, folder):
    """Rewrites the files holding an older copy; returns what it said."""
    fresh = {key(m): m for m in json.load(gzip.open(new_path)).get("models", [])}
    said = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if (not name.startswith("models") or not name.endswith(".json.gz")
                or os.path.samefile(path, new_path)):
            continue
        data = json.load(gzip.open(path))
        models = data.get("models", [])
        swapped = [m["family"] for m in models
                   if key(m) in fresh and not same(m, fresh[key(m)])]
        if not swapped:
            continue
        data["models"] = [dict(fresh[key(m)], id=m["id"]) if key(m) in fresh else m
                          for m in models]
        with gzip.open(path, "wt") as f:
            json.dump(data, f)
        said.append(f"{name}: its copy of {', '.join(swapped)} replaced by "
                    f"the model in {os.path.basename(new_path)}")
    return said


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    for line in sync(sys.argv[1], sys.argv[2]):
        print(line)


if __name__ == "__main__":
    main()
