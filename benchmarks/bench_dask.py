"""Exact k-NN against a reference set spread over a Dask cluster: 1 vs 2 workers, and an
estimate for larger jobs from measured per-task times.

    python benchmarks/bench_dask.py [--ref 200000] [--query 4096] [--parts 8] [--k 5]

Data: the census-like table of benchmarks/make_census_like.py (30 nominal + 10
continuous columns, 5 % missing), metric HVDM fitted on the reference rows.  Prints, with
the load average: the wall time of ``hdist.dask.kneighbors_distributed(..., ddf)`` on a
LocalCluster of 1 and of 2 single-threaded worker processes (checked equal to the local
call), the time of one (query block x reference partition) task and of one merge, and
the estimate for 10^8 reference x 10^6 query rows on N workers.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hdist                                     # noqa: E402
import hdist.dask as hd                          # noqa: E402
from make_census_like import make               # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ref", type=int, default=200_000)
    p.add_argument("--query", type=int, default=4096)
    p.add_argument("--parts", type=int, default=8)
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--k", type=int, default=5)
    args = p.parse_args()
    import dask.dataframe as dd
    import distributed
    R = make(args.ref, 0)
    y = R.pop("income").to_numpy()
    R = R.drop(columns="person_id")
    Q = make(args.query, 1).drop(columns=["person_id", "income"])
    metric = hdist.Metric("hvdm").fit(R, y)
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    t = time.perf_counter()
    d0, i0 = metric.kneighbors(Q, args.k, n_jobs=1)
    local = time.perf_counter() - t
    print("local, 1 thread: %.1f s for %d x %d rows" % (local, args.query, args.ref))

    # one task and one merge, timed in this process
    part = R.iloc[:args.ref // args.parts]
    qb = Q.iloc[:args.block]
    enc = hd._encode_part(metric, part)
    hd._local_topk(qb, enc, args.k, 0, 1)       # the partition's embedding, once
    t = time.perf_counter()
    piece = hd._local_topk(qb, enc, args.k, 0, 1)
    task = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(10):
        hd.merge_topk([piece] * 4, args.k)
    merge = (time.perf_counter() - t) / 10
    pairs = args.block * len(part)
    print("one task (partition already encoded): %d queries x %d reference rows in %.3f s (%.2f ns per pair); "
          "one 4-way merge of %d rows: %.2f ms" % (args.block, len(part), task,
                                                   1e9 * task / pairs, args.block,
                                                   1e3 * merge))
    ref = dd.from_pandas(R, npartitions=args.parts)
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, processes=True,
                                      threads_per_worker=1, dashboard_address=None) as c, \
                distributed.Client(c) as client:
            ref_p = client.persist(ref)
            distributed.wait(ref_p)
            t = time.perf_counter()
            d, i = hd.kneighbors_distributed(metric, Q, args.k, ref_p,
                                             query_block=args.block)
            wall = time.perf_counter() - t
            assert np.array_equal(i, i0) and np.array_equal(d, d0)
            print("%d worker(s): %.1f s (equal to the local call); load %.2f"
                  % (workers, wall, os.getloadavg()[0]))
    per_pair = task / pairs
    big_pairs = 1e8 * 1e6
    tasks = (1e6 / args.block) * (1e8 / len(part))
    print("estimate, 10^8 reference x 10^6 query rows: %.3g pairs, %.3g tasks of %d x %d"
          % (big_pairs, tasks, args.block, len(part)))
    for n in (1, 16, 64, 256):
        hours = big_pairs * per_pair / n / 3600
        print("  %4d single-core workers: %.1f h of search (+ merges: %.1f min)"
              % (n, hours, tasks * merge / 4 / n / 60))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
