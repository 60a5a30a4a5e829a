#!/bin/bash
# large-body.sh BIN ROUNDS VARIANT...: the 3.9 MB keep-alive row (wrk -t1
# -c10, 3 s after 1 s of warm-up) for variants of a tern built with
# large-body-experiment.patch, interleaved with lighttpd, in the files and
# configurations bench.sh (../2026-11-24-perf/bench.sh) writes to
# /tmp/perfpeers. A variant is NAME=ENV=VALUE,ENV=VALUE; W1=1 among them
# runs tern with one worker (tern1.toml). CPU µs per request is the
# server's (user + system).
w=/tmp/perfpeers; bin=$1; rounds=${2:-3}; shift 2; variants="$@"; C=${C:-10}; P=${P:-3.9m.bin}; D=${D:-3}
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for r in $(seq $rounds); do for v in $variants lighttpd; do
  if [ $v = lighttpd ]; then setsid lighttpd -D -f $w/lighttpd.conf >/dev/null 2>&1 & port=18503
  else
    envs=$(echo ${v#*=} | tr ',' ' ')
    case " $envs " in *" W1=1 "*) cfg=$w/tern1.toml; port=18509;; *) cfg=$w/tern.toml; port=18501;; esac
    setsid env $envs $bin serve --config $cfg >/dev/null 2>&1 &
  fi
  pid=$!; sleep 0.8
  wrk -t1 -c$C -d1s http://127.0.0.1:$port/$P >/dev/null
  c0=$(cpu $pid); out=$(wrk -t1 -c$C -d${D}s --latency http://127.0.0.1:$port/$P); c1=$(cpu $pid)
  n=$(echo "$out" | awk '/requests in/{print $1}'); rps=$(echo "$out" | awk '/Requests\/sec/{print $2}'); p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  echo "${v%%=*} rps=$rps p99=$p99 cpu_us=$(echo "($c1-$c0)*10000/$n" | bc -l | cut -c1-6)"
  kill $pid; sleep 0.5
done; done
