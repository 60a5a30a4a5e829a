#!/bin/sh
i=0; while [ $i -lt 20000 ]; do echo "stderr line $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" >&2; i=$((i+1)); done
printf 'Content-Type: text/plain\r\n\r\nok\n'
