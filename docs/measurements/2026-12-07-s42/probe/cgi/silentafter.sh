#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\nfirst\n'
sleep 20
echo never
