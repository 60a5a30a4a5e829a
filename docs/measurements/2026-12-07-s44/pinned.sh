# pinned.sh: sourced by us.sh, ts.sh, ipi.sh and kp.sh. `start SERVER` starts
# nginx (peers.sh's config) or tern ($TERN with $TERN_CONF) pinned to core 1
# with all its threads, waits for it and warms it with 2,000 requests of $path
# from core 0; sets pid (the leader of its process group) and port.
# `stop` ends it. Needs ../shared/bench/peers.sh run once (/tmp/peerbench).
start() {
  case $1 in
    nginx) setsid taskset -c 1 nginx -c /tmp/peerbench/conf/nginx.conf -g 'daemon off;' >/dev/null 2>&1 & pid=$!; port=18081 ;;
    tern) setsid taskset -c 1 "${TERN:-/tmp/s44/tern-pgo}" serve --config "${TERN_CONF:-/tmp/s44/ptern.toml}" >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1
  taskset -c 0 ab -q -c 1 -n 2000 "http://127.0.0.1:$port$path" >/dev/null 2>&1
}
stop() { kill -- -"$pid"; wait "$pid" 2>/dev/null; sleep 0.3; }
