"""An evaluation's kept candidate times (bench/eval/run.sh gpu --times):
eval-times.tsv.gz, or eval-N-times.tsv.gz per part where it was timed in
several calls (PART=N). Each file has a header line, then rows of
context, source, config, us, launches. Read by plan_diff.py,
times_to_results.py and rescore.py."""
import glob
import gzip
import os


def paths_of(results):
    """The times files of a results folder: its whole-run file and every
    part's (a folder may hold both, as report.py reads every eval*.csv: a
    run, then some of its groups timed again as a part)."""
    one = os.path.join(results, "eval-times.tsv.gz")
    parts = sorted(glob.glob(os.path.join(results, "eval-*-times.tsv.gz")))
    return ([one] if os.path.exists(one) else []) + parts


def expand(sources):
    """Each source as given, a results folder as its paths_of."""
    out = []
    for s in sources:
        out += paths_of(s) if os.path.isdir(s) else [s]
    return out


def rows(paths):
    """(context, source, config, us, launches) of every file, as text."""
    for path in paths:
        with gzip.open(path, "rt") as f:
            next(f)
            for line in f:
                yield tuple(line.rstrip("\n").split("\t"))
