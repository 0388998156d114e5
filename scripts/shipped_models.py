#!/usr/bin/env python3
"""The shipped models files (models/pretrained/<gpu>/models*.json.gz) after a
training, as scripts/train_pretrained.sh leaves them. A model is known by
its (device name, op, precision, family): the device's name, not its whole
record, whose ptxas string or driver may change between trainings on one
GPU model. The daemon answers with the model of a family it stored last.

  scripts/shipped_models.py keep-newest FILE
      FILE (an export of a store that kept every model) keeps only the
      newest model (highest id) of each; says how many it dropped.
  scripts/shipped_models.py sync NEW DIR
      every other models*.json.gz in DIR that holds a model of the same
      (device name, op, precision, family) as one in NEW gets NEW's in its
      place, keeping its own id: an older copy in a file imported after NEW
      would answer instead of the model just trained
      (PretrainedTest.NoShippedModelIsShadowedByAnOlderCopy fails on such a
      pair; models.json.gz keeps copies of the fp32 models).
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


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def save(path, data):
    with gzip.open(path, "wt") as f:
        json.dump(data, f)


def keep_newest(path):
    """Drops all but the newest model of each key; returns what it said."""
    data = load(path)
    models = data.get("models", [])
    newest = {}
    for m in models:
        if key(m) not in newest or int(m["id"]) > int(newest[key(m)]["id"]):
            newest[key(m)] = m
    kept = [m for m in models if newest[key(m)] is m]
    if len(kept) == len(models):
        return []
    data["models"] = kept
    save(path, data)
    return [f"dropped {len(models) - len(kept)} older model(s) of a family trained again"]


def sync(new_path, folder):
    """Rewrites the files holding an older copy; returns what it said."""
    fresh = {key(m): m for m in load(new_path).get("models", [])}
    said = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if (not name.startswith("models") or not name.endswith(".json.gz")
                or os.path.samefile(path, new_path)):
            continue
        data = load(path)
        models = data.get("models", [])
        swapped = [m["family"] for m in models
                   if key(m) in fresh and not same(m, fresh[key(m)])]
        if not swapped:
            continue
        data["models"] = [dict(fresh[key(m)], id=m["id"]) if key(m) in fresh else m
                          for m in models]
        save(path, data)
        said.append(f"{name}: its copy of {', '.join(swapped)} replaced by "
                    f"the model in {os.path.basename(new_path)}")
    return said


def main():
    args = sys.argv[1:]
    if args[:1] == ["keep-newest"] and len(args) == 2:
        said = keep_newest(args[1])
    elif args[:1] == ["sync"] and len(args) == 3:
        said = sync(args[1], args[2])
    else:
        sys.exit("usage: scripts/shipped_models.py keep-newest FILE | sync NEW DIR")
    for line in said:
        print(line)


if __name__ == "__main__":
    main()
