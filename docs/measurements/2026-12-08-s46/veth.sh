#!/usr/bin/env bash
# 3.9 MB over a veth pair into a network namespace, the server's egress held to RATE by tbf:
# tern copying (default) against tern with sendfile for the whole file (XSFMAX).
# Per request: tern's CPU, and the host's busy CPU (wrk's included).
# The link, set up and taken down as root (this kernel has tbf, not netem):
#   ip netns add t46c; ip link add t46s type veth peer name t46c0
#   ip link set t46c0 netns t46c; ip addr add 10.46.0.1/24 dev t46s; ip link set t46s up
#   ip netns exec t46c ip addr add 10.46.0.2/24 dev t46c0
#   ip netns exec t46c ip link set t46c0 up; ip netns exec t46c ip link set lo up
#   tc qdisc add dev t46s root tbf rate 2gbit burst 256k latency 20ms
#   ...; ip link del t46s; ip netns del t46c
C=${C:-1}; d=${D:-8}
busy() { awk '/^cpu / {print $2+$3+$4+$7+$8}' /proc/stat; }
for r in $(seq ${ROUNDS:-3}); do for v in copy sendfile; do
  case $v in
    copy) setsid /tmp/s46/tern-x serve --config /tmp/s46/veth.toml >/dev/null 2>&1 & pid=$! ;;
    sendfile) XSFMAX=100000000 setsid /tmp/s46/tern-x serve --config /tmp/s46/veth.toml >/dev/null 2>&1 & pid=$! ;;
  esac
  sleep 1
  ip netns exec t46c wrk -t1 -c$C -d2 http://10.46.0.1:18095/4m.bin >/dev/null 2>&1
  s0=$(awk '{print $14+$15}' /proc/$pid/stat); b0=$(busy)
  ip netns exec t46c wrk -t1 -c$C -d$d http://10.46.0.1:18095/4m.bin > /tmp/s46/wrk.txt 2>&1 & w=$!
  sleep 0.3; wp=$(pgrep -P $w wrk || echo $w); wt0=$(awk '{print $14+$15}' /proc/$wp/stat 2>/dev/null || echo 0)
  wait $w
  s1=$(awk '{print $14+$15}' /proc/$pid/stat); b1=$(busy)
  n=$(awk '/requests in/ {print $1}' /tmp/s46/wrk.txt)
  echo "$r $v $(awk '/Requests\/sec/ {print $2}' /tmp/s46/wrk.txt) req/s $(awk '/Transfer\/sec/ {print $2}' /tmp/s46/wrk.txt)/s, tern $(( (s1-s0)*10000/n )) us/req, host busy $(( (b1-b0)*10000/n )) us/req"
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
