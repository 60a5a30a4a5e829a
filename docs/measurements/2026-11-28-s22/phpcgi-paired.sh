#!/bin/bash
R=$1 N=$2 C=$3
st() { awk '{print $14+$15, $16+$17}' /proc/$1/stat; }
one() { name=${1%%:*}; port=${1##*:}; pid=$(cat /tmp/phpcgi22/$name.pid)
  read a0 c0 <<< "$(st $pid)"
  rps=$(ab -k -c $C -n $N http://127.0.0.1:$port/phpcgi/hello.php 2>&1 | awk '/Requests per/{print $4}')
  read a1 c1 <<< "$(st $pid)"
  echo "$r $name rps=$rps self_us=$(( (a1-a0)*10000/N )) children_us=$(( (c1-c0)*10000/N ))"; }
for r in $(seq 1 $R); do if [ $((r%2)) = 1 ]; then one tern:18711; one l:18712; else one l:18712; one tern:18711; fi; done
