#!/bin/bash
# usage: instructions.sh TERN_BIN...   (from the repository's root)
# User-space instructions a request of each build (scripts/instructions.sh:
# callgrind, ab -k -c1 after 300 requests of warm-up) on four rows: a
# FastCGI "Hello!" and 64 KB from peers.sh's C application on a Unix socket
# (4 processes), a cached 0 B file, and php-fpm's "Hello!" (4 children, a
# route with a script directory). The application and php-fpm are not
# tern's children, so they are not counted.
set -eu
. "$(dirname "$0")/../2026-12-03-s28/common.sh"
workdir /tmp/fcgiins
tern_conf 18711 "unix:$w/app.sock" > $w/unix.toml
start_app -s $w/app.sock -M 0666
: > $w/www/0k.html
mkdir -p $w/php $w/run && chmod 755 $w/php $w/run
printf '<?php echo "Hello!\\n";\n' > $w/php/hello.php && chmod 644 $w/php/hello.php
cat > $w/fpm.conf <<T
[global]
pid = $w/run/php-fpm.pid
error_log = $w/run/php-fpm.log
daemonize = no
[bench]
user = nobody
group = nogroup
listen = $w/run/php.sock
listen.mode = 0666
pm = static
pm.max_children = 4
pm.max_requests = 0
T
cat >> $w/unix.toml <<T
[[site.route]]
prefix = "/php"
handler = "fastcgi"
connect = "unix:$w/run/php.sock"
dir = "$w/php"
max_connections = 4
T
fpm=$(compgen -c php-fpm | sort -V | tail -1)
"$fpm" -F -y $w/fpm.conf > $w/run/fpm.out 2>&1 & fpm_pid=$!
sleep 1
for bin in "$@"; do
  for row in "1000 /fcgi/hello" "1000 /fcgi/64k" "2000 /0k.html" "1000 /php/hello.php"; do
    set -- $row
    echo "$bin: $(scripts/instructions.sh -n $1 http://127.0.0.1:18711$2 -- "$bin" serve --config $w/unix.toml 2>&1 | tail -1)"
  done
done
kill $fpm_pid; stop_app "$spawner"
