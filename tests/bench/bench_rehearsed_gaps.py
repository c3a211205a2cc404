"""Served plots and arange with and without idle time between requests: what the rehearsed
spares (README, "Serving") give when the CPUs have time to rehearse, and what is left when
they do not (back to back, the requests get plain spares).

    /usr/bin/python3 tests/bench/bench_rehearsed_gaps.py --pysnip ./pysnip [-n 30]

Prints the p50 of each job, per gap, from the client's send to the parsed answer (one kept
connection, as bench_scientific's served rounds)."""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

from bench_scientific import ARANGE, PLOT  # noqa: E402  (the same jobs)

GAPS_MS = (0, 50, 100, 300)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pysnip", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                     "pysnip"))
    ap.add_argument("-n", type=int, default=30, help="requests per job and gap")
    a = ap.parse_args()
    os.environ["PYSNIP"] = os.path.abspath(a.pysnip)
    import servekit
    srv = servekit.Server("--policy", "scientific")
    try:
        conn = srv.conn()
        print("rehearsed spares by gap (%s, load %.2f), p50 over %d requests"
              % (time.strftime("%Y-%m-%d %H:%M"), os.getloadavg()[0], a.n))
        for name, code in (("plot", PLOT), ("arange", ARANGE)):
            row = []
            for gap in GAPS_MS:
                ts = []
                for _ in range(a.n):
                    time.sleep(gap / 1000.0)
                    t0 = time.perf_counter()
                    st, _, v = srv.request("POST", "/v1/exec", {"code": code}, conn=conn)
                    ts.append((time.perf_counter() - t0) * 1000)
                    assert st == 200 and v["status"] == "ok", v
                row.append("gap %3d ms: %6.2f ms" % (gap, statistics.median(ts)))
            print("  %-7s %s" % (name, "   ".join(row)))
        conn.close()
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
