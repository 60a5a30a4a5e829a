# Sourced by the scripts that start tern on listeners bound to port 0
# (h2spec.sh, tls-scan.sh, pgo-train.sh).
#
# tern_ports OUT PID SCHEME COUNT: waits up to 10 s for tern (process PID,
# its standard output in the file OUT) to print COUNT "SCHEME://127.0.0.1:PORT"
# lines, SCHEME being http or https, and prints those ports one a line, in
# the order tern listed its listeners. Fails, printing nothing, when tern
# exits first or the time passes.
tern_ports() {
  local out=$1 pid=$2 scheme=$3 count=$4 ports
  for _ in $(seq 1 100); do
    ports=$(grep -o "$scheme://127\.0\.0\.1:[0-9]*" "$out" | sed 's/.*://' || true)
    if [ "$(printf '%s' "$ports" | grep -c .)" -ge "$count" ]; then
      printf '%s\n' "$ports" | head -n "$count"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
