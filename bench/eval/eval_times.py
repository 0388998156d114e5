"""An evaluation's kept candidate times (bench/eval/run.sh gpu --times):
eval-times.tsv.gz, or eval-N-times.tsv.gz per part where it was timed in
several calls (PART=N). Each file has a header line, then rows of
context, source, config, us, launches. Read by plan_diff.py,
times_to_results.py and rescore.py."""
import glob
import gzip
import os


def paths_of(results):
    """The times files of a results folder: its one file, or its parts'."""
    one = os.path.join(results, "eval-times.tsv.gz")
    if os.path.exists(one):
        return [one]
    return sorted(glob.glob(os.path.join(results, "eval-*-times.tsv.gz")))


def rows(paths):
    """(context, source, config, us, launches) of every file, as text."""
    for path in paths:
        with gzip.open(path, "rt") as f:
            next(f)
            for line in f:
                yield tuple(line.rstrip("\n").split("\t"))
