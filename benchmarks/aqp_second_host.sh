#!/bin/bash
# The AQP workloads' latency on a second machine, two codes alternated (session 14 ran it on the device tool's
# 16-core host, CPU only).  Run from the repository's root there:
#
#     bash benchmarks/aqp_second_host.sh OUT BASE tpch ssb
#
# OUT: a folder for the results (one tarball, results.tgz); BASE: another checkout's root (its parzen/ and
# benchmarks/), e.g. `git archive <commit> parzen benchmarks | tar -x -C .base`.  Per workload: TPC-H SF1 (and SSB
# SF1 from it) made by benchmarks/workloads_data.py in /tmp/wl, the synopsis built by this checkout's code
# (aqp_workloads.py --reuse), then this code and BASE in turn, base / new / base, on the same stored synopsis
# (--reuse --read-only), each `aqp_workloads.py --scale 1 --no-pilotdb --rounds 5`.  Wheels in .whl/ (duckdb,
# sqlglot, sqlglotc, datasketches, tpchgen-cli for a machine without a package index) are installed to /tmp/site
# first.
OUT=$1 BASE=$(cd "$2" && pwd); shift 2
T0=$(date +%s)
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
NEW=$PWD
python3 --version; lscpu | grep -E "Model name|^CPU\(s\)" || true
mkdir -p /tmp/wl /tmp/res "$OUT"
for w in "$@"; do
  cd "$NEW/benchmarks"
  [ -f /tmp/wl/tpch_sf1.duckdb ] || PYTHONPATH=/tmp/site:$NEW python3 workloads_data.py tpch --scale 1 --dir /tmp/wl > /dev/null || exit 1
  if [ "$w" = ssb ]; then PYTHONPATH=/tmp/site:$NEW python3 workloads_data.py ssb --scale 1 --dir /tmp/wl > /dev/null || exit 1; fi
  for run in new1 base1 new2 base2; do
    code=$NEW; [[ $run == base* ]] && code=$BASE
    extra="--reuse --read-only"; [ $run = new1 ] && extra="--reuse"
    cd "$code/benchmarks"
    PYTHONPATH=/tmp/site:$code python3 aqp_workloads.py "$w" --scale 1 --data /tmp/wl --no-pilotdb --rounds 5 $extra \
      --machine-note "second host, nothing else running; code $run" \
      --output-dir /tmp/res --output-name "aqp_workload_${w}_sf1_$run" > "/tmp/res/${w}_$run.log" 2>&1 \
      || { tail -20 "/tmp/res/${w}_$run.log"; exit 1; }
    echo "$w $run done at $(( $(date +%s) - T0 )) s"
  done
done
tar -czf "$OUT/results.tgz" -C /tmp/res .
