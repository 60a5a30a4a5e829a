#!/bin/sh
# A CGI script that writes a complete response (with its own Content-Length) and exits 0, but leaves a
# background child holding stdout (cgi/silentexit.sh). tern drops the script's Content-Length, streams
# chunked, waits for EOF on the pipe, and after ~2x the route timeout (timeout = "4s" in t.toml) cuts the
# response off: no last chunk, curl exits 18. Also cgi/silentafter.sh (prints, then sleeps): cut at 8 s, not 4 s.
PORT=${1:-18701}
for s in silentexit silentafter; do
  start=$(date +%s.%N)
  curl -s -i -m 15 -o /tmp/s42/probe/logs/$s.out "http://127.0.0.1:$PORT/cgi-bin/$s.sh"; rc=$?
  end=$(date +%s.%N)
  echo "== $s: curl exit $rc after $(echo "$end - $start" | bc) s (18 = transfer closed with outstanding read data remaining)"
  tr -d '\r' < /tmp/s42/probe/logs/$s.out | grep -v '^date'
done
