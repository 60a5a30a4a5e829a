#!/bin/sh
# start the probe instance(s): tern loop on 18701 (t.toml), hyper loop on 18702 (t_hyper.toml). Kill by the PID files.
cd /tmp/s42/probe
setsid /tmp/s42/tern-rel serve --config t.toml > logs/tern1.out 2>&1 & echo $! > tern1.pid
[ "$1" = "--hyper" ] && { setsid /tmp/s42/tern-rel serve --config t_hyper.toml > logs/tern2.out 2>&1 & echo $! > tern2.pid; }
sleep 1
