#!/bin/sh
( sleep 20; echo child-done > /tmp/s42/probe/logs/forkchild ) &
printf 'Content-Type: text/plain\r\n\r\nparent done\n'
