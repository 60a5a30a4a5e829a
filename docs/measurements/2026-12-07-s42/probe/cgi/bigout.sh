#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
head -c 20000000 /dev/zero
